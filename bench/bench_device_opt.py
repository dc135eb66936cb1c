"""Device-code optimisation in a ``--fast-compile`` build, measured: real fork ``.cu`` objects, sm_90.

``--fast-compile`` builds host code at -O0; the device half of each ``.cu`` (cicc, then ptxas) still
runs at nvcc's defaults, which optimise fully. This bench configures the real fork tree
(``../shared/fixtures/mxnet-fork-*.tar.xz``) through the harness's configure step as a development
build configures it (the CUDA profile, MXNET_CUDA_ARCH=9.0, ``fast_compile.fast_compile_defines``),
takes each object's nvcc command line from ``ninja -t commands`` (what CMake wrote, no compiler
launcher) and runs it once per variant: today's line, and the line with one device-side option
appended. The variants of one object run back to back; besides the wall it records the compile's CPU
seconds (user + system of nvcc and its phases), which move far less than the wall when the shared
machine's load does, so the CPU ratio is the one to read. nvcc's ``--time`` splits each compile into
its phases (wall); the bench sums them into device (cicc + ptxas + fatbinary) and host (everything
else) and prints seconds, object bytes and the ratio of each variant to today's, side by side.

    .venv/bin/python bench/bench_device_opt.py [--src=DIR] [--object src/operator/nn/softmax.cu ...]
                                               [--variant NAME ...] [--nice 10]
    .venv/bin/python bench/bench_device_opt.py --estimate=NINJA_LOG --cu-ratio=R [--cu-ratio=R ...]
                                               [--cu-tier=SECONDS:R ...] [--jobs 16]

``--estimate`` does the arithmetic for a whole build instead: a GPU hold's ``.ninja_log`` with each
``.cu`` step's time times R (a ratio measured here), summed, and packed onto ``--jobs`` cores by a
list scheduler twice: in the log's order (the order the steps finished in that build, near ninja's;
on the oneDNN-off log it gives 1164 s for the real 1075 s) and longest first (dependencies left out:
the objects are independent of each other; the link, 16 s, is added at the end).

Every compile runs alone (one at a time): nvcc's phases are single-threaded, so on a shared machine
a second compile beside it would measure the neighbour, not the option.
"""
from __future__ import annotations

import argparse
import csv
import heapq
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_compile_cache import unpack_fork  # noqa: E402
from build_steps import configure, cuda_root as cuda_root_step  # noqa: E402
from build_steps.arch import make_arch  # noqa: E402
from build_steps.fast_compile import fast_compile_defines  # noqa: E402
from build_steps.profile_data import get_profile  # noqa: E402
from build_steps.readers.ninja_log import read_commands  # noqa: E402

WORK = ROOT / ".tmp" / "bench-device-opt"
#: the objects of docs/bench_device_opt_2026-12-06.txt, one per length class of the 16-core H100 build:
#: a short one (layer_norm 38 s), a mid one (pooling 101 s) and the second longest (softmax 398 s;
#: log_softmax, 410 s, instantiates the same softmax-inl.h kernels). On 2 shared cores softmax alone takes 7-12 minutes a variant
DEFAULT_OBJECTS = ["src/operator/nn/layer_norm.cu", "src/operator/nn/pooling.cu", "src/operator/nn/softmax.cu"]
#: name -> what is appended to the nvcc line. "today" is --fast-compile as it is; -Ofc (nvcc 12.8+,
#: --Ofast-compile) is nvcc's own device fast-compile level; -Xptxas -O<n> lowers ptxas alone
VARIANTS = {
    "today": [],
    "-Ofc=min": ["-Ofc=min"],
    "-Ofc=mid": ["-Ofc=mid"],
    "-Ofc=max": ["-Ofc=max"],
    "ptxas -O1": ["-Xptxas", "-O1"],
    "ptxas -O0": ["-Xptxas", "-O0"],
}
#: nvcc --time phase names that compile device code (the rest is preprocessing and host code)
DEVICE_PHASES = ("cicc", "ptxas", "fatbinary")
#: left out of the configure, as bench_fast_compile does: on, they add their -DMXNET_USE_*=1 and include
#: directories to a .cu line, not a device flag (their effect on these objects' compile time is not
#: measured here). The fork's own ccache hook off, so every run compiles
QUIET = {"USE_ONEDNN": "OFF", "USE_OPENCV": "OFF", "USE_CCACHE": "OFF"}


def configure_build(src: Path, build: Path) -> tuple[dict, float]:
    profile = get_profile("cuda")
    cuda_root = cuda_root_step.assemble_cuda_root(python=sys.executable, stack=profile.cuda)
    if not (build / "build.ninja").exists():
        res = configure.configure(src, build, profile, make_arch(profile, "9.0", {}), WORK / "logs",
                                  extra_defs=cuda_root.cmake_args, env=cuda_root.env,
                                  overrides={**QUIET, **fast_compile_defines()})
        return cuda_root.env, res.seconds
    return cuda_root.env, 0.0


def nvcc_line(build: Path, obj: str) -> list[str]:
    """The object's compile command as ninja would run it (the last command of its chain)."""
    out = subprocess.run(["ninja", "-C", str(build), "-t", "commands", obj], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()
    line = out[-1]
    # CMake writes "cd <build> && <nvcc> ..." for none of these; keep what follows a leading cd
    if " && " in line:
        line = line.rsplit(" && ", 1)[1]
    return shlex.split(line)


def phases(csv_path: Path) -> dict:
    """nvcc --time's CSV -> {phase: ms}, summed over repeats of a phase name."""
    sums: dict = {}
    with open(csv_path, newline="") as fh:
        for raw in csv.DictReader(fh):
            # nvcc pads every field with spaces, the header's names too
            row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
            name = row.get("phase name", "")
            try:
                ms = float(row.get("metric") or 0)
            except ValueError:
                continue
            sums[name] = sums.get(name, 0.0) + ms
    return sums


def compile_once(build: Path, argv: list[str], obj: str, extra: list[str], env: dict, nice: int,
                 tag: str) -> tuple[float, float, float, int]:
    """(wall s, CPU s, device-phase s, object bytes) of one compile of ``obj`` with ``extra``
    appended. The CPU seconds (user + system of nvcc and its phases) move less than the wall when
    the shared machine's load does."""
    out = build / obj
    out.unlink(missing_ok=True)
    timing = WORK / "time" / (obj.replace("/", "_") + "." + tag.replace(" ", "").replace("=", "") + ".csv")
    timing.parent.mkdir(parents=True, exist_ok=True)
    timing.unlink(missing_ok=True)
    cmd = ["nice", "-n", str(nice), *argv, *extra, "--time", str(timing)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=build, env={**os.environ, **env}, capture_output=True, text=True)
    took = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{obj} failed with {tag}: exit {proc.returncode}")
    ph = phases(timing)
    device = sum(ms for name, ms in ph.items() if any(name.startswith(p) for p in DEVICE_PHASES)) / 1000
    return took, cpu, device, out.stat().st_size


#: libmxnet.so's link on the 16-core H100 host (docs/gpu_runs/real_fork_onednn_off_2026-12-06.ninja_log)
LINK_SECONDS = 16.4


def pack(durations: list[float], jobs: int) -> float:
    """The wall time of ``durations`` run in this order on ``jobs`` workers, each step taken by
    the first free worker (what ninja does with independent steps)."""
    free = [0.0] * jobs
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def estimate(log: Path, ratios: list[float], jobs: int, tiers: list[tuple[float, float]] | None = None) -> None:
    """One row per uniform ``.cu`` ratio, and with ``tiers`` ((seconds, ratio), ...) one row where
    each .cu step gets the ratio of the longest threshold it reaches in the log (a long object's
    device half is a larger share of it than a short one's, so the ratio differs by length)."""
    with tempfile.TemporaryDirectory() as tmp:  # read_commands reads <build>/.ninja_log
        (Path(tmp) / ".ninja_log").write_bytes(log.read_bytes())
        commands, _ = read_commands(Path(tmp))
    objs = [c for c in commands if c.target.endswith(".o")]
    cu = sum(c.seconds for c in objs if c.target.endswith(".cu.o"))
    print(f"=== {log.name}: {len(objs)} objects, {sum(c.seconds for c in objs):,.0f} s summed, "
          f".cu {cu:,.0f} s; {jobs} cores, + link {LINK_SECONDS} s ===")
    print(f"{'.cu ratio':>28}{'summed':>10}{'sum/cores':>11}{'log order':>11}{'longest 1st':>13}"
          f"{'longest step':>14}")
    rows = [(f"{r:.2f}", [(0.0, r)]) for r in ratios]
    if tiers:
        rows.append((" ".join(f">={t:.0f}s:{r:.2f}" for t, r in sorted(tiers)), sorted(tiers)))
    for label, steps in rows:
        def ratio(seconds: float) -> float:
            return [r for t, r in steps if seconds >= t][-1] if any(seconds >= t for t, _ in steps) else 1.0
        times = [c.seconds * ratio(c.seconds) if c.target.endswith(".cu.o") else c.seconds for c in objs]
        total = sum(times)
        print(f"{label:>28}{total:>9,.0f}s{total / jobs + LINK_SECONDS:>10.0f}s"
              f"{pack(times, jobs) + LINK_SECONDS:>10.0f}s{pack(sorted(times, reverse=True), jobs) + LINK_SECONDS:>12.0f}s"
              f"{max(times):>13.0f}s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, help="an unpacked fork tree (default: unpack the fixture)")
    ap.add_argument("--object", dest="objects", action="append", help="a .cu source (repeatable)")
    ap.add_argument("--variant", dest="variants", action="append", choices=list(VARIANTS),
                    help="a variant to time (repeatable; default all; 'today' is always timed)")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--estimate", type=Path, metavar="NINJA_LOG", help="estimate a whole build's wall from this log")
    ap.add_argument("--cu-ratio", type=float, action="append", help="with --estimate: a .cu time ratio (repeatable)")
    ap.add_argument("--jobs", type=int, default=16, help="with --estimate: cores (default 16, the GPU host's)")
    ap.add_argument("--cu-tier", action="append", metavar="SECONDS:RATIO",
                    help="with --estimate: a row where the .cu steps of at least SECONDS in the log get RATIO "
                         "(repeatable: the longest threshold reached wins; shorter steps keep 1.0)")
    args = ap.parse_args(argv)
    if args.estimate:
        tiers = [(float(t), float(r)) for t, r in (v.split(":", 1) for v in args.cu_tier or ())]
        estimate(args.estimate, [1.0] + (args.cu_ratio or []), args.jobs, tiers)
        return 0
    src = (args.src or unpack_fork(ROOT / ".tmp" / "bench" / "fork")).resolve()
    build = WORK / "build-sm90-fast"
    env, conf_s = configure_build(src, build)
    print(f"configured {build} ({conf_s:.1f}s; 0 = reused)", flush=True)
    names = ["today"] + [v for v in (args.variants or VARIANTS) if v != "today"]
    sources = args.objects or DEFAULT_OBJECTS
    lines = {s: nvcc_line(build, f"CMakeFiles/mxnet.dir/{s}.o") for s in sources}
    for s, line in lines.items():
        print(f"$ {shlex.join(line)}", flush=True)
    print(f"{len(sources)} objects x {len(names)} variants, one compile at a time under nice {args.nice}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    res: dict = {}
    for s in sources:
        obj = f"CMakeFiles/mxnet.dir/{s}.o"
        for name in names:
            took, cpu, device, size = compile_once(build, lines[s], obj, VARIANTS[name], env, args.nice, name)
            res[(s, name)] = (took, cpu, device, size)
            print(f"  {name:<10} {took:7.1f}s (cpu {cpu:7.1f}s, device phases {device:6.1f}s) {size:>10} B  {s}  "
                  f"[load {os.getloadavg()[0]:.1f}]", flush=True)
    print()
    print(f"=== device-code optimisation of a --fast-compile .cu (sm_90), {len(sources)} real fork objects, "
          f"{os.cpu_count()} cores ===")
    for s in sources:
        base, base_cpu, base_dev, _size = res[(s, "today")]
        print(f"{s}")
        print(f"  {'variant':<10}{'wall':>9}{'cpu':>9}{'device':>9}{'host':>9}{'bytes':>11}{'wall/today':>11}"
              f"{'cpu/today':>10}{'device/today':>13}")
        for name in names:
            took, cpu, device, size = res[(s, name)]
            print(f"  {name:<10}{took:>8.1f}s{cpu:>8.1f}s{device:>8.1f}s{took - device:>8.1f}s{size:>11}"
                  f"{took / base:>11.2f}{cpu / base_cpu:>10.2f}{(device / base_dev if base_dev else 0):>13.2f}")
    if len(sources) > 1:
        print("sum of the objects")
        for name in names:
            took = sum(res[(s, name)][0] for s in sources)
            cpu = sum(res[(s, name)][1] for s in sources)
            base = sum(res[(s, "today")][0] for s in sources)
            base_cpu = sum(res[(s, "today")][1] for s in sources)
            print(f"  {name:<10}{took:>8.1f}s{cpu:>8.1f}s{took / base:>11.2f}{cpu / base_cpu:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
