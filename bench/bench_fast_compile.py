"""--fast-compile's level, measured: real fork objects compiled at -O0, -O1 and the release's -O3.

The C++ half of a one-arch build is its slow part (docs/gpu_runs: -O3 reached [615/779] after
1119 s on 16 cores, -O0 [620/779] after 519 s). This bench compiles a fixed set of real objects
of the fork tree (``../shared/fixtures/mxnet-fork-*.tar.xz``) through the harness's configure
step, one build dir per level (the levels as ``fast_compile.fast_compile_defines`` writes them, the
release with none), and times each object at each level in turn (round robin, so a change in
the machine's load falls on every level alike). It prints per-object seconds and the ratio of
each level's sum to the release's, side by side.

    .venv/bin/python bench/bench_fast_compile.py [--src=DIR] [--repeat N]

The CPU profile is configured (no CUDA root needed): host-code optimisation is what the option
changes, and a .cu file's host half is compiled by the same gcc at the same level.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_compile_cache import unpack_fork  # noqa: E402
from build_steps import configure  # noqa: E402
from build_steps.arch import Arch  # noqa: E402
from build_steps.fast_compile import fast_compile_defines  # noqa: E402
from build_steps.profile_data import get_profile  # noqa: E402

WORK = ROOT / ".tmp" / "bench-fast"
#: a heavy operator object (the tensor/numpy operator files dominate a build's C++ half), a
#: runtime object and a light front-end one: on 2 shared cores one -O3 pass of these takes minutes
SOURCES = ["src/operator/tensor/broadcast_reduce_op_value.cc", "src/operator/numpy/np_einsum_op.cc",
           "src/imperative/imperative.cc", "src/api/operator/numpy/np_cumsum.cc"]
LEVELS = {"-O0": fast_compile_defines("-O0"), "-O1": fast_compile_defines("-O1"), "release -O3": {}}
#: left out of the configure: they change no compile line of SOURCES and cost configure time;
#: the fork's own ccache hook off, so a repeated run compiles instead of hitting a cache
QUIET = {"USE_ONEDNN": "OFF", "USE_OPENCV": "OFF", "USE_CCACHE": "OFF"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, help="an unpacked fork tree (default: unpack the fixture)")
    ap.add_argument("--repeat", type=int, default=1, help="compile each object this many times per level")
    args = ap.parse_args(argv)
    src = (args.src or unpack_fork(ROOT / ".tmp" / "bench" / "fork")).resolve()
    profile = get_profile("cpu")
    builds = {}
    for level, defs in LEVELS.items():
        build = WORK / f"build{level.split()[-1]}"
        shutil.rmtree(build, ignore_errors=True)
        res = configure.configure(src, build, profile, Arch(), WORK / "logs" / level.split()[-1],
                                  overrides={**QUIET, **defs})
        print(f"configured {level}: {build} ({res.seconds:.1f}s)", flush=True)
        builds[level] = build
    times = {level: {s: [] for s in SOURCES} for level in LEVELS}
    print(f"{len(SOURCES)} objects x {len(LEVELS)} levels x {args.repeat}; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    for _ in range(args.repeat):
        for source in SOURCES:
            obj = f"CMakeFiles/mxnet.dir/{source}.o"
            for level, build in builds.items():
                (build / obj).unlink(missing_ok=True)
                start = time.monotonic()
                proc = subprocess.run(["ninja", "-C", str(build), obj], capture_output=True, text=True)
                took = time.monotonic() - start
                if proc.returncode != 0:
                    print(proc.stdout[-3000:], file=sys.stderr)
                    raise SystemExit(f"{obj} failed at {level}")
                times[level][source].append(took)
                print(f"  {level:<12} {took:6.1f}s  {source}", flush=True)
    print()
    print(f"=== host optimisation vs compile time, {len(SOURCES)} real fork objects "
          f"(best of {args.repeat}), {os.cpu_count()} cores ===")
    print(f"{'object':<52}" + "".join(f"{lv:>13}" for lv in LEVELS))
    sums = {lv: 0.0 for lv in LEVELS}
    for source in SOURCES:
        row = f"{source:<52}"
        for level in LEVELS:
            best = min(times[level][source])
            sums[level] += best
            row += f"{best:>12.1f}s"
        print(row)
    release = sums["release -O3"]
    print(f"{'sum':<52}" + "".join(f"{sums[lv]:>12.1f}s" for lv in LEVELS))
    print(f"{'ratio to the release':<52}" + "".join(f"{sums[lv] / release:>13.2f}" for lv in LEVELS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
