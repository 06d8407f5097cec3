"""Goldens of chapter 8, second half: the whole GPT (loss, logits and every parameter's
gradient) and torch.optim.AdamW, computed by PyTorch.

Run with Debian's PyTorch:  /usr/bin/python3 tools/goldens/chapter8_model.py
Writes tests/goldens/8-training/model_*.txt and adamw_*.txt (format: tests/goldens/README.md).

The GPT is written here with torch's own functions, in the workbook's parameter layout
(wb::parameters() names, PyTorch [out, in] weights) — the way llm.c's test_gpt2 compares the C
model against a PyTorch debug state:

    x = wte[inputs] + wpe[:T]
    for each block:  x = x + Linear_o(causal MHA(LayerNorm1(x)))
                     x = x + Linear_proj(GELU(Linear_fc(LayerNorm2(x))))
    logits = LayerNorm_f(x) @ lm_head.T            (no bias)
    loss = cross_entropy(logits [B*T, V], targets [B*T], ignore_index=-1)

LayerNorm eps = 1e-5, exact GELU (nn.GELU() default), attention scale 1/sqrt(D/H). The weights
are larger than GPT-2's N(0, 0.02) init (std 0.3-0.5, LayerNorm gains 1 + N(0, 0.2²), biases
N(0, 0.2²)) so that every term of the model moves the loss visibly.
"""

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden_io  # noqa: E402

SCRIPT = "chapter8_model.py"
EPS = 1e-5
IGNORE = -1


def names(L):
    """wb::parameters() order and names."""
    out = ["wte", "wpe"]
    for l in range(L):
        out += [f"blocks.{l}.{n}" for n in
                ["ln1_g", "ln1_b", "w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o",
                 "ln2_g", "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj"]]
    return out + ["ln_f_g", "ln_f_b", "lm_head"]


def shapes(V, T_max, D, L):
    s = {"wte": (V, D), "wpe": (T_max, D), "ln_f_g": (D,), "ln_f_b": (D,), "lm_head": (V, D)}
    for l in range(L):
        p = f"blocks.{l}."
        for n in ["ln1_g", "ln1_b", "b_q", "b_k", "b_v", "b_o", "ln2_g", "ln2_b", "b_proj"]:
            s[p + n] = (D,)
        for n in ["w_q", "w_k", "w_v", "w_o"]:
            s[p + n] = (D, D)
        s[p + "w_fc"], s[p + "b_fc"], s[p + "w_proj"] = (4 * D, D), (4 * D,), (D, 4 * D)
    return s


def random_params(V, T_max, D, L):
    """Named float32 leaf tensors that require grad."""
    params = {}
    for name in names(L):
        shape = shapes(V, T_max, D, L)[name]
        if name.endswith("_g"):
            t = 1.0 + 0.2 * torch.randn(shape)        # LayerNorm gain near 1
        elif len(shape) == 1:
            t = 0.2 * torch.randn(shape)              # biases and LayerNorm shifts
        elif name in ("wte", "wpe", "lm_head"):
            t = 0.5 * torch.randn(shape)
        else:
            t = 0.3 * torch.randn(shape)
        params[name] = t.requires_grad_(True)
    return params


def gpt_forward(p, H, L, inputs, targets):
    B, T = inputs.shape
    D = p["wte"].shape[1]
    d = D // H
    x = p["wte"][inputs] + p["wpe"][:T]                              # [B, T, D]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(L):
        pre = f"blocks.{l}."
        h = F.layer_norm(x, (D,), p[pre + "ln1_g"], p[pre + "ln1_b"], eps=EPS)

        def heads(t):                                                 # [B, T, D] -> [B, H, T, d]
            return t.view(B, T, H, d).transpose(1, 2)

        q = heads(F.linear(h, p[pre + "w_q"], p[pre + "b_q"]))
        k = heads(F.linear(h, p[pre + "w_k"], p[pre + "b_k"]))
        v = heads(F.linear(h, p[pre + "w_v"], p[pre + "b_v"]))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)             # [B, H, T, T]
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        att = (weights @ v).transpose(1, 2).reshape(B, T, D)          # heads merged
        x = x + F.linear(att, p[pre + "w_o"], p[pre + "b_o"])
        h = F.layer_norm(x, (D,), p[pre + "ln2_g"], p[pre + "ln2_b"], eps=EPS)
        x = x + F.linear(F.gelu(F.linear(h, p[pre + "w_fc"], p[pre + "b_fc"])),
                         p[pre + "w_proj"], p[pre + "b_proj"])
    x = F.layer_norm(x, (D,), p["ln_f_g"], p["ln_f_b"], eps=EPS)
    logits = F.linear(x, p["lm_head"]).reshape(B * T, -1)             # [B*T, V]
    loss = F.cross_entropy(logits, targets.reshape(B * T), ignore_index=IGNORE)
    return loss, logits


def model_case(file, seed, V, T_max, D, H, L, B, T, ignored):
    """One forward and backward; `ignored` lists (b, t) targets set to ignore_index."""
    torch.manual_seed(seed)
    params = random_params(V, T_max, D, L)
    tokens = torch.randint(0, V, (B, T + 1))
    inputs, targets = tokens[:, :-1].clone(), tokens[:, 1:].clone()   # shifted by one (§15)
    for b, t in ignored:
        targets[b, t] = IGNORE
    loss, logits = gpt_forward(params, H, L, inputs, targets)
    loss.backward()
    tensors = {
        "config": torch.tensor([V, T_max, D, H, L]),
        "inputs": inputs,
        "targets": targets,
        "loss": loss,
        "logits": logits,
    }
    for name in names(L):
        tensors[name] = params[name]
    for name in names(L):
        tensors["grad." + name] = params[name].grad
    golden_io.write(
        f"8-training/{file}",
        f"GPT forward + backward: V={V} T_max={T_max} D={D} H={H} L={L}, B={B} T={T}, "
        f"{len(ignored)} targets = ignore_index {IGNORE}; loss = cross_entropy(logits, targets, "
        "ignore_index=-1) mean over valid targets; grad.NAME = dloss/dNAME by autograd",
        seed,
        tensors,
        SCRIPT,
    )


def adamw_case(file, seed, V, T_max, D, H, L, hyper):
    """Three steps of torch.optim.AdamW on named tensors with given gradients."""
    torch.manual_seed(seed)
    lr, beta1, beta2, eps, wd = hyper
    shape = shapes(V, T_max, D, L)
    params = {n: torch.randn(shape[n]).requires_grad_(True) for n in names(L)}
    grads = [{n: torch.randn(shape[n]) for n in names(L)} for _ in range(3)]
    start = {n: params[n].detach().clone() for n in names(L)}
    opt = torch.optim.AdamW([params[n] for n in names(L)], lr=lr, betas=(beta1, beta2), eps=eps,
                            weight_decay=wd)
    after = []
    for g in grads:
        for n in names(L):
            params[n].grad = g[n].clone()
        opt.step()
        after.append({n: params[n].detach().clone() for n in names(L)})
    tensors = {"config": torch.tensor([V, T_max, D, H, L]), "hyper": torch.tensor(hyper)}
    for n in names(L):
        tensors["param." + n] = start[n]
        for s in range(3):
            tensors[f"grad{s + 1}.{n}"] = grads[s][n]
        tensors["after1." + n] = after[0][n]
        tensors["after3." + n] = after[2][n]
        state = opt.state[params[n]]
        tensors["m3." + n] = state["exp_avg"]
        tensors["v3." + n] = state["exp_avg_sq"]
    golden_io.write(
        f"8-training/{file}",
        f"torch.optim.AdamW(lr={lr}, betas=({beta1}, {beta2}), eps={eps}, weight_decay={wd}), "
        f"3 steps on the tensors of a GPT V={V} T_max={T_max} D={D} H={H} L={L}: param.NAME at "
        "the start, gradS.NAME the gradient of step S, afterS.NAME after step S, m3/v3 = "
        "exp_avg / exp_avg_sq after step 3",
        seed,
        tensors,
        SCRIPT,
    )


if __name__ == "__main__":
    model_case("model_tiny.txt", seed=80, V=11, T_max=8, D=12, H=3, L=2, B=2, T=5,
               ignored=[(0, 1), (1, 4)])
    model_case("model_full_length.txt", seed=81, V=7, T_max=4, D=8, H=2, L=1, B=3, T=4,
               ignored=[])
    adamw_case("adamw_three_steps.txt", seed=82, V=3, T_max=2, D=4, H=2, L=1,
               hyper=(0.05, 0.8, 0.95, 1e-6, 0.1))
