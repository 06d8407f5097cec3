"""Goldens for chapter 4 (scaled dot-product attention), computed with PyTorch.

Run with Debian's PyTorch (torch 1.13):  /usr/bin/python3 tools/goldens/chapter4.py
Writes tests/goldens/4-sdpa/{no_mask,causal,padding,fully_masked_row}.txt.

Attention is written out explicitly, as the notes' formula:
    scores  = q @ k.transpose(-2, -1) / sqrt(d_k)
    weights = softmax(scores.masked_fill(~allowed, -inf), dim=-1)
    output  = weights @ v
and cross-checked against torch's own kernel when this torch has one:
torch.nn.functional.scaled_dot_product_attention (torch >= 2.0) or the 1.13 prototype
torch.nn.functional._scaled_dot_product_attention (boolean attn_mask, True = may read).

Mask convention in the files: `allowed` is 1 where a query may read a key, 0 where the key is
hidden (the workbook's wb::Mask::allowed). Shapes: q [B, H, N, d_k], k [B, H, M, d_k],
v [B, H, M, d_v], allowed [B or 1, N, M], scores/weights [B, H, N, M], output [B, H, N, d_v].
"""

import math

import torch
import torch.nn.functional as F

from golden_io import write

SCRIPT = "chapter4.py"
SEED = 4000  # case number c uses torch.manual_seed(SEED + c)


def attention(q, k, v, allowed=None):
    """The notes' formula, step by step. `allowed` broadcasts as [B or 1, 1, N, M]."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)            # [B, H, N, M]
    masked = scores
    if allowed is not None:
        masked = scores.masked_fill(~allowed[:, None], float("-inf"))  # mask BEFORE softmax
    weights = torch.softmax(masked, dim=-1)                       # [B, H, N, M]
    output = weights @ v                                          # [B, H, N, d_v]
    return scores, weights, output


def torch_kernel():
    """torch's own attention function, or None if this torch has none."""
    for name in ("scaled_dot_product_attention", "_scaled_dot_product_attention"):
        if hasattr(F, name):
            return name, getattr(F, name)
    return None, None


def cross_check(q, k, v, allowed, weights, output, rows_ok):
    """Compares the explicit formula with torch's kernel on the rows that are finite."""
    name, kernel = torch_kernel()
    if kernel is None:
        print("  (no torch attention kernel in this torch: cross-check skipped)")
        return
    B, H, N, M = weights.shape
    mask = None if allowed is None else allowed[:, None].expand(B, H, N, M)
    if name == "_scaled_dot_product_attention":
        out_k, w_k = kernel(q, k, v, attn_mask=mask, need_attn_weights=True)
    else:
        out_k = kernel(q, k, v, attn_mask=mask)
        w_k = None
    assert torch.allclose(out_k[rows_ok], output[rows_ok], atol=1e-6), name
    if w_k is not None:
        assert torch.allclose(w_k[rows_ok], weights[rows_ok], atol=1e-6), name
    print(f"  cross-checked with torch.nn.functional.{name}")


def case(number, file, description, B, H, N, M, d_k, d_v, make_mask=None):
    seed = SEED + number
    torch.manual_seed(seed)
    q = torch.randn(B, H, N, d_k)
    k = torch.randn(B, H, M, d_k)
    v = torch.randn(B, H, M, d_v)
    allowed = None if make_mask is None else make_mask()
    scores, weights, output = attention(q, k, v, allowed)

    # A query that may read no key at all gets softmax of all -inf: torch returns NaN there.
    # The workbook documents all-zero weights and a zero output row instead (sdpa.hpp), so
    # those rows are recorded as zeros; every other row is torch's value unchanged.
    dead = torch.zeros(B, H, N, dtype=torch.bool)
    if allowed is not None:
        dead = (~allowed.any(dim=-1))[:, None].expand(B, H, N)  # [B, H, N]
    live = ~dead
    assert torch.isfinite(weights[live]).all() and torch.isfinite(output[live]).all()
    assert torch.isnan(weights[dead]).all()  # what torch really gives on a fully masked row
    cross_check(q, k, v, allowed, weights, output, live)
    weights = torch.where(dead[..., None], torch.zeros_like(weights), weights)
    output = torch.where(dead[..., None], torch.zeros_like(output), output)

    tensors = {"q": q, "k": k, "v": v}
    if allowed is not None:
        tensors["allowed"] = allowed.to(torch.float32)  # 1 = may read, 0 = hidden
    tensors.update({"scores": scores, "weights": weights, "output": output})
    write(f"4-sdpa/{file}", description, seed, tensors, SCRIPT)


def main():
    # 1. No mask, cross-attention shapes: N != M and d_k != d_v.
    case(1, "no_mask.txt",
         "sdpa without a mask; B=2, H=2, N=3 queries, M=5 keys, d_k=4, d_v=3",
         B=2, H=2, N=3, M=5, d_k=4, d_v=3)

    # 2. Causal mask [1, T, T] shared by the batch: query i may read keys 0..i.
    T = 4
    case(2, "causal.txt",
         "sdpa with a causal mask allowed [1, T, T] (lower triangle) shared by the batch; "
         "B=2, H=2, T=4, d_k=4, d_v=3",
         B=2, H=2, N=T, M=T, d_k=4, d_v=3,
         make_mask=lambda: torch.tril(torch.ones(T, T, dtype=torch.bool))[None])

    # 3. Padding mask [B, N, M]: sequence b has lengths[b] real keys, the rest is padding.
    lengths = [5, 3]
    case(3, "padding.txt",
         "sdpa with a padding mask allowed [B, N, M]: key j readable iff j < length[b], "
         "lengths = [5, 3]; B=2, H=2, N=3, M=5, d_k=4, d_v=3",
         B=2, H=2, N=3, M=5, d_k=4, d_v=3,
         make_mask=lambda: torch.stack(
             [(torch.arange(5) < n)[None].expand(3, 5) for n in lengths]))

    # 4. One fully masked row per sequence. torch gives NaN on those rows; the file holds
    #    torch's values for every other row and the documented zeros for the masked rows.
    def partly_dead():
        allowed = torch.tensor([
            [[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]],   # b=0: query 1 may read nothing
            [[0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]],   # b=1: query 0 may read nothing
        ], dtype=torch.bool)
        return allowed
    case(4, "fully_masked_row.txt",
         "sdpa with fully masked rows (query 1 of sequence 0, query 0 of sequence 1): torch "
         "gives NaN there, the file records the documented zeros for those rows and torch's "
         "values elsewhere; B=2, H=2, N=3, M=4, d_k=4, d_v=3",
         B=2, H=2, N=3, M=4, d_k=4, d_v=3, make_mask=partly_dead)


if __name__ == "__main__":
    main()
