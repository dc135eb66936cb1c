"""``--fast-compile``: the host-code optimisation level of a development build, as CMake definitions;
``--fast-compile-device``: its device-code level, opted into on top."""
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

#: ``--fast-compile-device=LEVEL``: nvcc's own device fast-compile level (``-Ofc``, nvcc 12.8+: "max"
#: disables many cicc/ptxas optimisations, "mid" the expensive ones, "min" a few). Opt-in on top of
#: --fast-compile, never its default: a --fast-compile build's bytes stay what they were (the GPU
#: holds compare sha256 across holds). Measured by bench/bench_device_opt.py
#: (docs/bench_device_opt_2026-12-06.txt): the device half (cicc + ptxas) is most of the longest
#: objects' time, and -Ofc shortens it (softmax.cu: mid 0.36x, max 0.48x today's CPU time; a 38 s
#: object about 1x); what it costs the GPU operators' speed is not measured. Appended to the CUDA flags only, after the host level: host code and the
#: C/C++ objects are compiled exactly as --fast-compile compiles them.
DEVICE_LEVELS = ("max", "mid", "min")


def fast_compile_defines(level: str = FAST_COMPILE_LEVEL, device: str | None = None) -> dict[str, str]:
    """The CMake definitions ``--fast-compile`` adds at configure; ``device``: the
    ``--fast-compile-device`` level, which adds nvcc's ``-Ofc=<device>`` to the CUDA compiles."""
    defines = {f"CMAKE_{lang}_FLAGS_RELEASE": f"{level} -DNDEBUG" for lang in ("C", "CXX", "CUDA")}
    if device is not None:
        if device not in DEVICE_LEVELS:  # the CLI's choices; a caller's typo is not a flag for nvcc
            raise ValueError(f"device fast-compile level {device!r}: one of {', '.join(DEVICE_LEVELS)}")
        defines["CMAKE_CUDA_FLAGS_RELEASE"] += f" -Ofc={device}"
    return defines
