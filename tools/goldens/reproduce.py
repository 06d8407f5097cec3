#!/usr/bin/python3
"""Reruns every golden script under the installed PyTorch and compares with the committed files.

    /usr/bin/python3 tools/goldens/reproduce.py          # every tools/goldens/chapter*.py

Each script writes into a scratch folder (WB_GOLDENS_OUT) instead of tests/goldens; then every
tensor of every file is compared, value by value, with the committed one under the checks' own
golden tolerance, |fresh - committed| <= 1e-5 + 1e-5·|committed| (wbtest::golden_tolerance,
tests/goldens/README.md). Prints the worst difference per file and exits 1 if any is outside.
The committed files record the torch version that wrote them; a different torch (Debian 12's
1.13, Debian 13's 2.6) must reproduce them within that tolerance.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMITTED = HERE.parent.parent / "tests" / "goldens"
ATOL = RTOL = 1e-5  # wbtest::golden_tolerance


def read(path):
    """name -> (shape, values) of a golden file (format: tests/goldens/README.md)."""
    tensors, lines = {}, path.read_text().splitlines()
    i = 0
    while i < len(lines):
        words = lines[i].split()
        if words and words[0] == "tensor":
            name, rank = words[1], int(words[2])
            shape = tuple(int(n) for n in words[3:3 + rank])
            values = [float(v) for v in lines[i + 1].split()] if i + 1 < len(lines) else []
            tensors[name] = (shape, values)
            i += 2
        else:
            i += 1
    return tensors


def main():
    try:
        import torch
    except ImportError:
        print("reproduce: PyTorch is not installed for this Python "
              f"({sys.executable}); Debian: apt-get install python3-torch (tools/setup.sh --torch)")
        return 2
    scripts = sorted(HERE.glob("chapter*.py"))
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, WB_GOLDENS_OUT=scratch)
        for script in scripts:
            run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                                 text=True)
            if run.returncode != 0:
                print(f"{script.name}: failed\n{run.stderr[-2000:]}")
                failures += 1
        for fresh_path in sorted(Path(scratch).rglob("*.txt")):
            relative = fresh_path.relative_to(scratch)
            committed_path = COMMITTED / relative
            if not committed_path.exists():
                print(f"{relative}: not committed")
                failures += 1
                continue
            fresh, committed = read(fresh_path), read(committed_path)
            worst, where, bad = 0.0, "", []
            for name, (shape, values) in committed.items():
                if name not in fresh or fresh[name][0] != shape:
                    bad.append(f"{name}: missing or another shape")
                    continue
                for k, (a, b) in enumerate(zip(fresh[name][1], values)):
                    excess = abs(a - b) / (ATOL + RTOL * abs(b))
                    if excess > worst:
                        worst, where = excess, f"{name}[{k}]: {a:.9g} vs {b:.9g}"
            status = "ok" if worst <= 1 and not bad else "OUTSIDE"
            failures += status != "ok"
            print(f"{str(relative):<44} {status:<8} worst {worst:.3f} of the tolerance"
                  + (f" ({where})" if where else "") + "".join("\n  " + b for b in bad))
    print(f"reproduce: torch {torch.__version__}, {len(scripts)} scripts: "
          + ("every committed golden reproduced within 1e-5 + 1e-5·|x|" if not failures
             else f"{failures} file(s) outside the tolerance"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
