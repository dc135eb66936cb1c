"""Cross-check build_steps.readers.fatbin against cuobjdump on big, real CUDA libraries.

For the GPU machine (which has cuobjdump and pip's CUDA 13 libraries):
    PYTHONPATH=. python3 gpu/fatbin_crosscheck.py [LIB ...]
Without arguments it checks libcublas.so.13 from the nvidia-cublas wheel and torch's
libtorch_cuda.so. For each library it prints the header walk's time and entry counts next to
cuobjdump's, and exits non-zero if the multisets of SASS and PTX names differ.
"""
from __future__ import annotations

import collections
import glob
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere
from build_steps.readers.fatbin import read_fatbin  # noqa: E402


def default_libraries() -> list[str]:
    found = []
    for rel in ("nvidia/cu13/lib/libcublas.so.13", "torch/lib/libtorch_cuda.so"):
        hits = [h for d in sys.path if d for h in glob.glob(f"{d}/{rel}")]
        if hits:
            found.append(sorted(hits)[0])
    return found


def cuobjdump_names(lib: str, flag: str) -> list[str]:
    out = subprocess.run(["cuobjdump", flag, lib], capture_output=True, text=True)
    return re.findall(r"\.(sm_\d+[af]?)\.(?:cubin|ptx)\s*$", out.stdout, re.M)


def check(lib: str) -> dict:
    t0 = time.perf_counter()
    report = read_fatbin(lib)
    walk_s = time.perf_counter() - t0
    ours_sass = collections.Counter(
        f"sm_{e.arch}{e.variant if e.variant == 'a' else ''}" for e in report.entries if e.kind == "sass")
    ours_ptx = collections.Counter(f"sm_{e.arch}{e.variant}" for e in report.entries if e.kind == "ptx")
    result = {"library": lib, "containers": report.containers, "walk_seconds": round(walk_s, 3),
              "sass": dict(sorted(ours_sass.items())), "ptx": dict(sorted(ours_ptx.items()))}
    if shutil.which("cuobjdump"):
        t0 = time.perf_counter()
        theirs_sass = collections.Counter(cuobjdump_names(lib, "--list-elf"))
        theirs_ptx = collections.Counter(cuobjdump_names(lib, "--list-ptx"))
        result["cuobjdump_seconds"] = round(time.perf_counter() - t0, 3)
        result["match"] = theirs_sass == ours_sass and theirs_ptx == ours_ptx
        if not result["match"]:
            result["cuobjdump_sass"] = dict(sorted(theirs_sass.items()))
            result["cuobjdump_ptx"] = dict(sorted(theirs_ptx.items()))
    return result


def main(argv: list[str]) -> int:
    libs = argv or default_libraries()
    if not libs:
        print("no CUDA libraries found to check", file=sys.stderr)
        return 2
    results = [check(lib) for lib in libs]
    print(json.dumps(results, indent=1))
    return 0 if all(r.get("match", True) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
