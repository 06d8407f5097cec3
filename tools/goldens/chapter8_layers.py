"""Goldens of chapter 8 (training), first half: every layer's forward and backward, and the loss.

Run with Debian's PyTorch (torch 1.13):  /usr/bin/python3 tools/goldens/chapter8_layers.py
Writes tests/goldens/8-training/layers_*.txt (format: tests/goldens/README.md).

Each forward is PyTorch's own module or function (F.linear, F.layer_norm, F.gelu, F.softmax
with a triu mask, F.cross_entropy); each gradient comes from torch's autograd, pulled back
from a fixed random upstream gradient `dy` (the gradient of sum(y * dy) with respect to the
inputs). Everything is float32, as the float instantiation of wb's layers.

Shapes (the names of chapters/8-training/layers.hpp):
  linear         x [N, in], weight [out, in], bias [out], dy [N, out]
  layer_norm     x [N, D], gamma [D], beta [D], eps; mean [N], rstd [N]
  gelu           x [N, F] (exact erf form, nn.GELU()'s default)
  attention      q, k, v [B, H, T, d], weights [B, H, T, T], out [B, H, T, d]
  cross_entropy  logits [N, V], targets [N] (stored as floats; -1 = ignore_index)
"""

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden_io  # noqa: E402

SCRIPT = "chapter8_layers.py"
SEED = 8000  # case number c uses torch.manual_seed(SEED + c)


def leaf(*shape, scale=1.0, shift=0.0):
    """A float32 leaf tensor with gradients, randn * scale + shift."""
    return (torch.randn(*shape) * scale + shift).requires_grad_(True)


def pull_back(y, *inputs):
    """Random upstream gradient dy; returns dy and d(sum(y * dy))/d(input) for each input."""
    dy = torch.randn_like(y)
    grads = torch.autograd.grad(y, inputs, grad_outputs=dy)
    return dy, grads


def linear():
    torch.manual_seed(SEED + 1)
    N, IN, OUT = 4, 5, 3  # in = 5: not a power of two
    x, w, b = leaf(N, IN), leaf(OUT, IN, scale=0.5), leaf(OUT, scale=0.5)
    y = F.linear(x, w, b)                                    # x @ w.T + b, [N, out]
    dy, (dx, dw, db) = pull_back(y, x, w, b)
    y_nobias = F.linear(x, w)                                # x @ w.T, [N, out]
    golden_io.write(
        "8-training/layers_linear.txt",
        "Linear y = x W^T + b (F.linear), N=4 in=5 out=3; dx, dweight, dbias from autograd "
        "with upstream dy; y_nobias = F.linear(x, weight)",
        SEED + 1,
        {"x": x, "weight": w, "bias": b, "y": y, "y_nobias": y_nobias, "dy": dy,
         "dx": dx, "dweight": dw, "dbias": db},
        SCRIPT,
    )


def layer_norm():
    torch.manual_seed(SEED + 2)
    N, D, eps = 3, 7, 1e-5  # D = 7: not a power of two
    # Rows with different means and spreads, so that a wrong mean or variance shows.
    x = (torch.randn(N, D) * torch.tensor([[0.5], [2.0], [1.0]])
         + torch.tensor([[1.0], [-3.0], [0.0]])).requires_grad_(True)
    gamma, beta = leaf(D, scale=0.5, shift=1.0), leaf(D, scale=0.5)
    y = F.layer_norm(x, (D,), gamma, beta, eps)
    var, mean = torch.var_mean(x.detach(), dim=-1, unbiased=False)  # correction 0, as LayerNorm
    rstd = 1.0 / torch.sqrt(var + eps)
    dy, (dx, dgamma, dbeta) = pull_back(y, x, gamma, beta)
    golden_io.write(
        "8-training/layers_layer_norm.txt",
        "LayerNorm over the last axis (F.layer_norm), N=3 D=7 eps=1e-5, biased variance "
        "(correction 0); mean and rstd = 1/sqrt(var + eps) per row; dx, dgamma, dbeta from "
        "autograd with upstream dy",
        SEED + 2,
        {"x": x, "gamma": gamma, "beta": beta, "eps": eps, "y": y, "mean": mean, "rstd": rstd,
         "dy": dy, "dx": dx, "dgamma": dgamma, "dbeta": dbeta},
        SCRIPT,
    )


def gelu():
    torch.manual_seed(SEED + 3)
    x = torch.randn(4, 6) * 2.0
    x[0, :] = torch.tensor([-6.0, -3.0, -1.0, 0.0, 1.0, 3.0])  # tails, zero and the knee
    x.requires_grad_(True)
    y = F.gelu(x)                                            # exact: x * Phi(x), erf form
    dy, (dx,) = pull_back(y, x)
    golden_io.write(
        "8-training/layers_gelu.txt",
        "GELU exact erf form (F.gelu, approximate='none'), x [4, 6]; dx from autograd with "
        "upstream dy",
        SEED + 3,
        {"x": x, "y": y, "dy": dy, "dx": dx},
        SCRIPT,
    )


def attention():
    torch.manual_seed(SEED + 4)
    B, H, T, d = 2, 2, 5, 3  # d = 3: not a power of two
    q, k, v = leaf(B, H, T, d), leaf(B, H, T, d), leaf(B, H, T, d)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)   # key j > query i
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                  # [B, H, T, T], zero above diagonal
    out = weights @ v                                        # [B, H, T, d]
    dout, (dq, dk, dv) = pull_back(out, q, k, v)
    golden_io.write(
        "8-training/layers_attention.txt",
        "causal attention softmax(q k^T / sqrt(d), future keys -inf) v, B=2 H=2 T=5 d=3; "
        "dq, dk, dv from autograd with upstream dout",
        SEED + 4,
        {"q": q, "k": k, "v": v, "weights": weights, "out": out, "dout": dout,
         "dq": dq, "dk": dk, "dv": dv},
        SCRIPT,
    )


def cross_entropy():
    torch.manual_seed(SEED + 5)
    N, V = 6, 5
    logits = leaf(N, V, scale=2.0)
    targets = torch.tensor([3, -1, 0, 4, -1, 1])             # rows 1 and 4 are padding
    loss = F.cross_entropy(logits, targets, ignore_index=-1)  # mean over the 4 valid rows
    (dlogits,) = torch.autograd.grad(loss, (logits,))
    # The same rows without the padded ones: the loss must not change.
    valid = targets != -1
    loss_valid_only = F.cross_entropy(logits[valid], targets[valid])
    assert torch.allclose(loss, loss_valid_only)
    golden_io.write(
        "8-training/layers_cross_entropy.txt",
        "mean cross entropy from raw logits (F.cross_entropy, ignore_index=-1), N=6 V=5, "
        "rows 1 and 4 ignored; dlogits = d loss / d logits from autograd",
        SEED + 5,
        {"logits": logits, "targets": targets, "loss": loss, "dlogits": dlogits},
        SCRIPT,
    )


if __name__ == "__main__":
    linear()
    layer_norm()
    gelu()
    attention()
    cross_entropy()
