#!/usr/bin/env python3
"""Makes the program's model file of the tiny GPT-2 of tests/goldens/8-training/gpt2_tiny.txt
the way a learner makes GPT-2's: its tensors, in GPT-2's names and layout, written as a
safetensors file like Hugging Face's model.safetensors, then tools/convert-gpt2.

    tests/minigpt/tiny_gpt2.py OUT.model     (also writes OUT.model.safetensors)
"""

import array
import json
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "goldens"))
from reproduce import read as golden_tensors  # noqa: E402  name -> (shape, values)

GOLDEN = ROOT / "tests" / "goldens" / "8-training" / "gpt2_tiny.txt"
VOCAB = ROOT / "tests" / "goldens" / "8-training" / "gpt2_tiny_vocab"


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header, the F32 data back to back.
    TENSORS: name -> (shape, values), values a list or an array('f'); written one by one, so a
    GPT-2-sized file (tools/measure-gpt2) is never held twice."""
    header, offset = {}, 0
    for name, (shape, values) in tensors.items():
        size = 4 * len(values)
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, values in tensors.values():
            blob = array.array("f", values)
            if sys.byteorder == "big":
                blob.byteswap()
            f.write(blob.tobytes())


def main():
    out = Path(sys.argv[1])
    tensors = golden_tensors(GOLDEN)
    heads = int(tensors["config"][1][3])
    weights = {n: t for n, t in tensors.items() if n.startswith("transformer.")}
    st = out.with_name(out.name + ".safetensors")
    write_safetensors(st, weights)
    return subprocess.call([sys.executable, str(ROOT / "tools" / "convert-gpt2"),
                            "--safetensors", str(st), "--vocab-dir", str(VOCAB),
                            "--heads", str(heads), "--out", str(out)])


if __name__ == "__main__":
    sys.exit(main())
