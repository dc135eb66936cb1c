"""The sandbox's overhead, measured side by side: the same steps with and without bubblewrap.

Two workloads, each run in alternation (sandboxed, unsandboxed, sandboxed, ...) so a change in
the machine's load falls on both modes alike:

- the sample tree's chain (selftest/sample_mxnet): configure, compile and package, each step
  through its build_steps function exactly as a run calls it, a fresh build dir every time and
  no compiler cache, so every round does the same work;
- the sample tree's compile through sccache, the build's own server confined in the compile's
  sandbox (or not, unsandboxed): the server's start and stop, a cold compile (a fresh cache each
  round) and a warm one (a fresh build dir, every object a hit);
- a real fork configure (``../shared/fixtures/mxnet-fork-*.tar.xz``, unpacked once): the CPU
  profile's first-time cmake configure into a fresh build dir (hundreds of try-compiles and
  probes, each a process started in the sandbox).

It prints each round's seconds, then per step the best and the median of each mode and their
ratio (sandboxed / unsandboxed), with the machine's load before and after.

    .venv/bin/python bench/bench_sandbox.py [--rounds N] [--no-fork] [--no-sample] [--no-sccache] [--src=DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from build_steps import bundle, compile, configure, package, sandbox  # noqa: E402
from build_steps.arch import Arch  # noqa: E402
from build_steps.profile_data import get_profile  # noqa: E402

WORK = ROOT / ".tmp" / "bench-sandbox"
MODES = ("sandboxed", "unsandboxed")
#: the fork configure as bench_fast_compile does it: no compiler cache hook; OpenCV and oneDNN off
#: (their find/ExternalProject steps cost minutes on this machine and add no sandboxed process kind)
FORK_QUIET = {"USE_ONEDNN": "OFF", "USE_OPENCV": "OFF", "USE_CCACHE": "OFF"}


def _sample_tree() -> Path:
    from selftest.fixtures_build import copy_sample_tree
    dest = WORK / "sample"
    shutil.rmtree(dest, ignore_errors=True)
    return copy_sample_tree(dest)


def sample_chain(src: Path, mode: str, profile) -> dict:
    build = WORK / f"sample-build-{mode}"
    shutil.rmtree(build, ignore_errors=True)
    logs = build / "harness-logs"
    times = {}
    start = time.monotonic()
    configure.configure(src, build, profile, Arch(), logs, overrides={"USE_CCACHE": "OFF"})
    times["configure"] = time.monotonic() - start
    start = time.monotonic()
    res = compile.compile_mxnet(build, 2, logs, progress=open(os.devnull, "w"), src=src)
    times["compile"] = time.monotonic() - start
    bundle.stage_package(res.library, src, profile)
    start = time.monotonic()
    package.build_wheel(src, profile.default_version(), profile, build / "harness-wheel", logs, sys.executable)
    times["package"] = time.monotonic() - start
    times["chain"] = times["configure"] + times["compile"] + times["package"]
    return times


def sccache_compile(src: Path, mode: str, profile) -> dict:
    from build_steps import launcher
    tool = launcher.choose("sccache")
    cache = WORK / f"sccache-{mode}"
    shutil.rmtree(cache, ignore_errors=True)
    os.environ.pop("SCCACHE_SERVER_PORT", None)  # the build's own server, as a run starts it
    os.environ["SCCACHE_DIR"] = str(cache)
    # a run's temporary dir, as a supervised run has: the server's TMPDIR and socket file
    run_tmp = WORK / f"run-tmp-{mode}"
    shutil.rmtree(run_tmp, ignore_errors=True)
    run_tmp.mkdir(parents=True)
    from build_steps import supervise
    os.environ[supervise.RUN_TMP] = str(run_tmp)
    build = WORK / f"sccache-build-{mode}"
    times = {}
    start = time.monotonic()
    server = launcher.private_server(tool, {}, confine=compile._server_box(build, {}, src=src))
    times["server start"] = time.monotonic() - start
    start = time.monotonic()
    server.stop()
    times["server stop"] = time.monotonic() - start
    for phase in ("sccache cold", "sccache warm"):
        shutil.rmtree(build, ignore_errors=True)
        logs = build / "harness-logs"
        configure.configure(src, build, profile, Arch(), logs, extra_defs=launcher.cmake_defines(tool))
        start = time.monotonic()
        res = compile.compile_mxnet(build, 2, logs, progress=open(os.devnull, "w"), launcher=tool, src=src)
        times[phase] = time.monotonic() - start
        stats = res.launcher or {}
        if phase == "sccache warm" and stats.get("misses"):
            raise SystemExit(f"the warm compile missed the cache ({mode}): {stats}")
    return times


def fork_configure(src: Path, mode: str, profile) -> dict:
    build = WORK / f"fork-build-{mode}"
    shutil.rmtree(build, ignore_errors=True)
    start = time.monotonic()
    configure.configure(src, build, profile, Arch(), build / "harness-logs", overrides=FORK_QUIET)
    return {"fork configure": time.monotonic() - start}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="runs of each workload per mode")
    ap.add_argument("--no-fork", action="store_true", help="the sample chain only")
    ap.add_argument("--no-sample", action="store_true", help="leave out the sample chain")
    ap.add_argument("--no-sccache", action="store_true", help="leave out the compile through sccache")
    ap.add_argument("--src", type=Path, help="an unpacked fork tree (default: unpack the fixture)")
    args = ap.parse_args(argv)
    why = sandbox.probe()
    if why:
        raise SystemExit(f"no sandbox on this host: {why}")
    profile = get_profile("cpu")
    sample = _sample_tree()
    workloads = [] if args.no_sample else [("sample chain", sample_chain, sample)]
    if not args.no_sccache:
        workloads.append(("sccache", sccache_compile, sample))
    if not args.no_fork:
        from bench.bench_compile_cache import unpack_fork
        workloads.append(("fork configure", fork_configure,
                          (args.src or unpack_fork(ROOT / ".tmp" / "bench" / "fork")).resolve()))
    load_before = os.getloadavg()
    print(f"{os.cpu_count()} cores, load {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}; "
          f"{args.rounds} round(s) per mode; {sandbox.bwrap_path()}", flush=True)
    results = {mode: {} for mode in MODES}
    for name, run, src in workloads:
        for i in range(args.rounds):
            order = MODES if i % 2 == 0 else MODES[::-1]
            for mode in order:
                sandbox.configure(enabled=(mode == "sandboxed"))
                times = run(src, mode, profile)
                for step, secs in times.items():
                    results[mode].setdefault(step, []).append(secs)
                print(f"  {name:<15} round {i + 1} {mode:<12} "
                      + "  ".join(f"{k} {v:6.2f}s" for k, v in times.items()), flush=True)
    load_after = os.getloadavg()
    print()
    print(f"=== sandbox overhead (bubblewrap), {args.rounds} round(s), load {load_before[0]:.1f} -> "
          f"{load_after[0]:.1f} on {os.cpu_count()} cores ===")
    print(f"{'step':<16}{'sandboxed best/median':>24}{'unsandboxed best/median':>26}{'ratio best':>12}"
          f"{'ratio median':>14}")
    for step in results["sandboxed"]:
        box, bare = results["sandboxed"][step], results["unsandboxed"][step]
        print(f"{step:<16}{min(box):>12.2f}s/{statistics.median(box):>7.2f}s"
              f"{min(bare):>14.2f}s/{statistics.median(bare):>7.2f}s"
              f"{min(box) / min(bare):>12.3f}{statistics.median(box) / statistics.median(bare):>14.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
