"""Writes golden files for the checks (format: tests/goldens/README.md).

Used by the tools/goldens/chapter*.py scripts, which run under Debian's PyTorch:
    /usr/bin/python3 tools/goldens/chapter4.py
"""

from pathlib import Path

import os

ROOT = Path(__file__).resolve().parent.parent.parent
# tools/goldens/reproduce.py points this elsewhere to compare a fresh run with the committed files.
GOLDENS = Path(os.environ.get("WB_GOLDENS_OUT", ROOT / "tests" / "goldens"))


def write(relative_path, description, seed, tensors, script):
    """Writes tensors (name -> torch tensor or float) to tests/goldens/<relative_path>.

    The file is written to a temporary name and renamed, so it is never left half-written.
    """
    import torch

    path = GOLDENS / relative_path
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# {description}",
        f"# framework: torch {torch.__version__}",
        "# dtype: float32",
        f"# seed: {seed}",
        f"# script: tools/goldens/{script}",
    ]
    for name, value in tensors.items():
        t = torch.as_tensor(value).detach().to(torch.float64)
        dims = " ".join(str(n) for n in t.shape)
        lines.append(f"tensor {name} {t.dim()} {dims}".rstrip())
        lines.append(" ".join(f"{v:.9g}" for v in t.flatten().tolist()))
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    print(f"wrote {path.relative_to(GOLDENS.parent) if GOLDENS.parent in path.parents else path}")
