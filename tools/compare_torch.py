#!/usr/bin/python3
"""Times PyTorch on the workbook's benchmark shapes, optionally beside the workbook's own numbers.

    /usr/bin/python3 tools/compare_torch.py                       # PyTorch only
    /usr/bin/python3 tools/compare_torch.py --build-dir build/bench   # and the C++ side by side
    /usr/bin/python3 tools/compare_torch.py --threads 1 --repeat 3 --quick

What is timed, for 1 and 2 threads (OMP_NUM_THREADS and MKL_NUM_THREADS are set before torch
is imported, in a fresh process per thread count, and OPENBLAS_NUM_THREADS=1: torch's own
OpenMP workers call the BLAS, and a threaded OpenBLAS under them oversubscribes the cores):
  - eager causal attention, softmax(q kᵀ / sqrt(d) + causal mask) v on [B, H, T, d] float32,
    forward, and backward alone (autograd.grad of the kept graph), in GFLOP/s of useful work:
    4·B·H·d·T(T+1)/2 for the forward (the visible half of the scores), 2.5 times that for the
    backward — the same counts as bench/bench_workbook.cpp, so the columns compare directly;
  - the same with PyTorch's fused F.scaled_dot_product_attention(is_causal=True) (rows
    ending _fused), where the installed torch has it (2.0 and later; Debian 12's 1.13 has not);
  - one training step of the capstone's mini-GPT (V=96, T=128, D=128, H=4, L=4, batch 16,
    AdamW): zero_grad, forward, cross entropy, backward, step; in tokens per second.
With --build-dir, the same rows are taken from the reference's capstone kernel
(bench/bench_workbook, rows capstone/.../reference/...) and from bench/train_step (the
capstone's GptTrainer, and chapter 8's readable reference as one more row).

Torch is optional: without it the script says so and exits 0. Timings on a shared machine vary;
each number is the median of --repeat runs.
"""
import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

ATTENTION_SHAPES = [(1, 8, 1024, 64), (4, 8, 1024, 64), (1, 8, 2048, 64)]
GPT = dict(V=96, T=128, D=128, H=4, L=4, B=16)


def causal_flops(B, H, T, d):
    return 4.0 * B * H * d * T * (T + 1) / 2


def shape_name(B, H, T, d):
    return f"B{B}_H{H}_T{T}_d{d}"


# ---- the worker: runs in a fresh process with the thread count already in the environment ----

def median_seconds(fn, repeat):
    fn()  # warm-up: allocations, thread pool
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(threads, repeat, quick):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rows = {}

    def causal_attention(q, k, v):
        T, d = q.shape[-2], q.shape[-1]
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        s = s.masked_fill(future, float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    # PyTorch's own fused kernel (torch >= 2.0) is what a PyTorch user would pick; torch 1.13
    # (Debian 12) has none, and its rows are then left empty.
    fused = getattr(F, "scaled_dot_product_attention", None)
    kinds = [("eager", causal_attention)]
    if fused is not None:
        kinds.append(("fused", lambda q, k, v: fused(q, k, v, is_causal=True)))

    shapes = ATTENTION_SHAPES[:1] if quick else ATTENTION_SHAPES
    for (B, H, T, d) in shapes:
        q, k, v, dout = (torch.randn(B, H, T, d) for _ in range(4))
        flops = causal_flops(B, H, T, d)
        for kind, attend in kinds:
            suffix = "" if kind == "eager" else "_fused"
            with torch.no_grad():
                sec = median_seconds(lambda: attend(q, k, v), repeat)
            rows[f"attention_forward{suffix}/{shape_name(B, H, T, d)}"] = flops / sec * 1e-9
            qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
            out = attend(qg, kg, vg)
            sec = median_seconds(
                lambda: torch.autograd.grad(out, (qg, kg, vg), dout, retain_graph=True), repeat)
            rows[f"attention_backward{suffix}/{shape_name(B, H, T, d)}"] = 2.5 * flops / sec * 1e-9

    # The mini-GPT: Pre-LN blocks, learned positions, GELU FFN of width 4D, separate LM head.
    V, Tm, D, Hh, L, Bt = (GPT[k] for k in ("V", "T", "D", "H", "L", "B"))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
            self.q, self.k, self.v, self.o = (torch.nn.Linear(D, D) for _ in range(4))
            self.fc, self.proj = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)

        def forward(self, x):
            Bx, T, _ = x.shape
            h = self.ln1(x)
            split = lambda t: t.view(Bx, T, Hh, D // Hh).transpose(1, 2)  # [B, H, T, d]
            a = causal_attention(split(self.q(h)), split(self.k(h)), split(self.v(h)))
            x = x + self.o(a.transpose(1, 2).reshape(Bx, T, D))
            return x + self.proj(F.gelu(self.fc(self.ln2(x))))

    class Gpt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = torch.nn.Embedding(V, D), torch.nn.Embedding(Tm, D)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
            self.ln_f = torch.nn.LayerNorm(D)
            self.head = torch.nn.Linear(D, V, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    tokens = torch.randint(0, V, (Bt, Tm + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(inputs).reshape(-1, V), targets.reshape(-1))
        loss.backward()
        opt.step()

    sec = median_seconds(step, repeat)
    rows["train_step/minigpt_B16_T128"] = Bt * Tm / sec
    print(json.dumps({"torch": torch.__version__, "rows": rows}))


# ---- the C++ side: the reference kernel from bench_workbook, the training step from train_step --

def workbook_rows(build_dir, threads, repeat):
    rows = {}
    # The workbook's programs run best with OpenMP's default (active) waiting, whatever the
    # torch side was given.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    bench = os.path.join(build_dir, "bench", "bench_workbook")
    if os.path.exists(bench):
        pattern = "^capstone/attention_(forward|backward)/reference/.*/threads:%d" % threads
        out = subprocess.run([bench, "--benchmark_filter=" + pattern, "--benchmark_format=json",
                              "--benchmark_repetitions=%d" % repeat,
                              "--benchmark_report_aggregates_only=true"],
                             capture_output=True, text=True, env=env, check=False)
        try:
            for b in json.loads(out.stdout)["benchmarks"]:
                if b.get("aggregate_name", "median") != "median" or "GFLOPs" not in b:
                    continue
                m = re.match(r"capstone/(attention_\w+)/reference/(\w+)/threads", b["run_name"])
                if m:
                    rows[f"{m.group(1)}/{m.group(2)}"] = b["GFLOPs"]
        except (ValueError, KeyError):
            print(f"  (could not read {bench}'s output: {out.stderr.strip()[:200]})")
    else:
        print(f"  ({bench} not found: configure with -DWB_BUILD_BENCH=ON and build bench_workbook)")
    train = os.path.join(build_dir, "bench", "train_step")
    if os.path.exists(train):
        env = dict(env, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
        out = subprocess.run([train, "--steps", str(max(repeat, 3)), "--threads", str(threads)],
                             capture_output=True, text=True, env=env, check=False)
        # "GptTrainer (capstone) median ... 10651 tokens/s" and "reference (chapter 8) ..."
        trainer = re.search(r"^GptTrainer.*?([0-9.]+) tokens/s", out.stdout, re.M)
        chapter8 = re.search(r"^reference.*?([0-9.]+) tokens/s", out.stdout, re.M)
        if trainer:
            rows["train_step/minigpt_B16_T128"] = float(trainer.group(1))
        if chapter8:
            rows["train_step/chapter8_reference_B16_T128"] = float(chapter8.group(1))
        if not (trainer or chapter8):
            print(f"  (could not read {train}'s output: {(out.stdout + out.stderr).strip()[-200:]})")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=5, help="runs per number (median)")
    parser.add_argument("--quick", action="store_true", help="only the first attention shape")
    parser.add_argument("--build-dir", help="a build with -DWB_BUILD_BENCH=ON, to compare")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker is not None:
        worker(args.worker, args.repeat, args.quick)
        return 0
    if importlib.util.find_spec("torch") is None:
        print("compare_torch: PyTorch is not installed for this Python "
              f"({sys.executable}); nothing to compare. (Debian: apt-get install python3-torch)")
        return 0

    results = {}
    version = "?"
    for n in args.threads:
        # Thread counts must be in the environment before torch (and its BLAS) is loaded.
        # OpenBLAS on one thread: torch parallelises with its OpenMP workers, which call the
        # BLAS; Debian's torch (2.6 with openblas-pthread) on OPENBLAS_NUM_THREADS=2 runs 2 to 40
        # times slower at 2 threads than at 1.
        env = dict(os.environ, OMP_NUM_THREADS=str(n), OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS=str(n))
        # PyTorch's best setting on more than one thread: its OpenMP workers sleep between
        # operations instead of spinning against OpenBLAS's threads.
        if n > 1:
            env["OMP_WAIT_POLICY"] = "passive"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(n),
               "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if out.returncode != 0:
            print(f"compare_torch: the torch run with {n} thread(s) failed:\n{out.stderr}")
            return 1
        data = json.loads(out.stdout.strip().splitlines()[-1])
        version = data["torch"]
        results[("torch", n)] = data["rows"]
        if args.build_dir:
            results[("workbook", n)] = workbook_rows(args.build_dir, n, args.repeat)

    names = []
    for rows in results.values():
        names += [name for name in rows if name not in names]
    print(f"PyTorch {version} vs the workbook's reference, medians of {args.repeat} runs")
    print("attention rows: GFLOP/s of useful causal work (_fused: F.scaled_dot_product_attention"
          "(is_causal=True), where this torch has it); train_step: tokens/s")
    print("settings: torch with OMP_WAIT_POLICY=passive above 1 thread and OPENBLAS_NUM_THREADS=1"
          " (its best), the workbook with OpenMP's default waiting (its best)\n")
    header = f"{'benchmark':<42}"
    for n in args.threads:
        header += f"{'torch ' + str(n) + 't':>12}"
        if args.build_dir:
            header += f"{'ours ' + str(n) + 't':>12}{'ours/torch':>11}"
    print(header)
    print("-" * len(header))
    for name in names:
        line = f"{name:<42}"
        for n in args.threads:
            t = results[("torch", n)].get(name)
            line += f"{t:>12.1f}" if t else f"{'-':>12}"
            if args.build_dir:
                o = results[("workbook", n)].get(name.replace("_fused/", "/"))
                line += f"{o:>12.1f}" if o else f"{'-':>12}"
                line += f"{o / t:>10.2f}x" if (o and t) else f"{'-':>11}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
