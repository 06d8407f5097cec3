"""Shared by every verb: the repository root, errors the user can fix, running commands and CMake."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The given mini-GPT program, beside the course (CMake's WB_MINIGPT_DIR names the same folder).
MINIGPT_DIR = ROOT / "minigpt"


class WorkbookError(Exception):
    """A problem the user can fix; printed without a traceback."""


def run(cmd, quiet=True, check=True):
    """Runs a command; on failure shows its output and raises WorkbookError."""
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    if not quiet:
        sys.stdout.write(result.stdout)
    if check and result.returncode != 0:
        if quiet:
            sys.stdout.write(result.stdout[-6000:])
        raise WorkbookError(f"command failed ({result.returncode}): {' '.join(map(str, cmd))}")
    return result


def cache_value(build_dir, name):
    """Reads NAME from build_dir/CMakeCache.txt, or None."""
    cache = Path(build_dir) / "CMakeCache.txt"
    if not cache.exists():
        return None
    for line in cache.read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


def configure(build_dir, **variables):
    """Configures (or reconfigures) build_dir with the given cache variables (None: unset)."""
    cmd = ["cmake", "-S", str(ROOT), "-B", str(build_dir)]
    if not (Path(build_dir) / "CMakeCache.txt").exists():
        cmd += ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DWB_BUILD_BENCH=OFF"]
    for key, value in variables.items():
        cmd.append(f"-U{key}" if value is None else f"-D{key}={value}")
    run(cmd)


def build(build_dir, target=None, jobs=2):
    """Builds TARGET (a name, or a list of names) and what it needs; everything when None."""
    cmd = ["cmake", "--build", str(build_dir), "-j", str(jobs)]
    if target:
        cmd += ["--target", *([target] if isinstance(target, str) else target)]
    run(cmd)


def require_build(build_dir):
    build_dir = Path(build_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        from .i18n import say
        raise WorkbookError(say("not_configured", build=build_dir))
    return build_dir


def progress_bar(done, total, width=30):
    filled = int(round(width * done / total)) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"
