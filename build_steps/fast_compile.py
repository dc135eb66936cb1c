"""``--fast-compile``: the host-code optimisation level of a development build, as CMake definitions."""
from __future__ import annotations

#: ``--fast-compile``: the host-code optimisation of a development build. The release compiles host
#: code at -O3 (the fork appends -O3 for Release; CMake's *_FLAGS_RELEASE add "-O3 -DNDEBUG"), which
#: is what makes the C++ half of a one-arch build slow. The *_FLAGS_RELEASE come last on each
#: compile line, so these win; nvcc's -O is its host-side level (device code stays at ptxas -O3).
#: -DNDEBUG stays: asserts on would change behaviour, not just speed. The level was chosen by
#: bench/bench_fast_compile.py (docs/bench_fast_compile_2026-12-03.txt): on the heavy operator objects -O0 took
#: 0.30x and -O1 0.54x the release's time, and the H200 build's C++ half ran 2.4x faster at -O0.
FAST_COMPILE_LEVEL = "-O0"
RELEASE_HOST_OPT = "-O3"


def fast_compile_defines(level: str = FAST_COMPILE_LEVEL) -> dict:
    """The CMake definitions ``--fast-compile`` adds at configure."""
    return {f"CMAKE_{lang}_FLAGS_RELEASE": f"{level} -DNDEBUG" for lang in ("C", "CXX", "CUDA")}
