"""Compiler cache on real fork code: cold build, warm rebuild, rebuild after touching a header.

A fixed set of real objects of the fork tree (``../shared/fixtures/mxnet-fork-*.tar.xz``) is
compiled through the harness's own steps (``configure.configure`` with the release CUDA profile
and archs, ``compile.compile_mxnet`` with the objects as Ninja targets and the chosen launcher):

  cold     fresh build dir, empty cache
  warm     build dir deleted, configured again, same cache
  touched  ``touch`` of one header the light objects include, same build dir

and prints the three side by side with the launcher's requests/hits/misses and warm/cold ratio
(target: warm <= 10 % of cold). ``--nvcc-threads`` also times one six-arch ``.cu`` compile
command as CMake wrote it, without and with nvcc ``--threads N``, with no launcher.

    .venv/bin/python bench/bench_compile_cache.py --src=/path/to/unpacked/fork [--launcher sccache]

The cache lives in ``.tmp/bench/cache-<launcher>`` (emptied before the cold run); sccache gets
its own server port so a user's running server and cache are left alone.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from build_steps import compile as compile_step  # noqa: E402
from build_steps import configure, cuda_root as cuda_root_step, launcher as compiler_cache  # noqa: E402
from build_steps.arch import make_arch  # noqa: E402
from build_steps.profile_data import get_profile  # noqa: E402

RELEASE_CUDA_ARCH = get_profile("cuda").cuda_arch

FIXTURE = ROOT.parent / "shared" / "fixtures" / "mxnet-fork-3f13890.tar.xz"
WORK = ROOT / ".tmp" / "bench"

#: Light C++ (the numpy front-end API, ~5 s each), heavier C++ (core runtime and operators) and
#: the two six-arch .cu with the fewest source lines that instantiate real kernels.
CC_LIGHT = [f"src/api/operator/numpy/linalg/{n}.cc" for n in (
    "np_det", "np_eig", "np_eigvals", "np_gesvd", "np_inv", "np_lstsq", "np_matrix_rank", "np_norm",
    "np_pinv", "np_potrf", "np_qr", "np_slogdet", "np_solve", "np_tensorinv", "np_tensorsolve")] + [
    f"src/api/operator/numpy/{n}.cc" for n in (
        "np_bincount_op", "np_cross", "np_cumsum", "np_diff_op", "np_dot_op", "np_kron",
        "np_trace_op", "np_tril_op", "np_triu_op", "np_where_op")]
CC_HEAVY = ["src/c_api/c_api_profile.cc", "src/imperative/imperative.cc", "src/ndarray/ndarray.cc",
            "src/operator/tensor/init_op.cc"]
CU = ["src/operator/crop.cu", "src/operator/quantization/dequantize.cu"]
SOURCES = CC_LIGHT + CC_HEAVY + CU
#: included by the light API objects only (a header edit that rebuilds part of the set)
TOUCH_HEADER = "src/api/operator/utils.h"
#: a port of its own: the bench's cache settings reach only a server it started
SCCACHE_PORT = "4411"


def objects(sources) -> list[str]:
    return [f"CMakeFiles/mxnet.dir/{s}.o" for s in sources]


def unpack_fork(dest: Path) -> Path:
    tree = dest / "mxnet"
    if not (tree / "CMakeLists.txt").exists():
        dest.mkdir(parents=True, exist_ok=True)
        print(f"unpacking {FIXTURE} into {dest}", flush=True)
        with tarfile.open(FIXTURE) as tf:
            tf.extractall(dest, filter="tar")
    return tree


def cache_env(name: str, cache_dir: Path) -> dict:
    if name == "sccache":
        return {"SCCACHE_DIR": str(cache_dir), "SCCACHE_SERVER_PORT": SCCACHE_PORT,
                "SCCACHE_CACHE_SIZE": "20G"}
    if name == "ccache":
        return {"CCACHE_DIR": str(cache_dir), "CCACHE_MAXSIZE": "20G"}
    return {}


def configure_tree(src: Path, build: Path, launcher, cuda_root, logs: Path) -> float:
    profile = get_profile("cuda")
    defs = {**cuda_root.cmake_args, **compiler_cache.cmake_defines(launcher)}
    res = configure.configure(src, build, profile, make_arch(profile, None, {}), logs, extra_defs=defs,
                              env=cuda_root.env)
    return res.seconds


def compile_set(build: Path, launcher, env: dict, jobs: int, logs: Path, src: Path | None = None):
    objs = objects(SOURCES)
    res = compile_step.compile_mxnet(build, jobs, logs, target=objs, env=env, library_name=objs[-1],
                                     launcher=launcher, src=src)
    return res


def nvcc_threads(build: Path, cu: str, threads: int, env: dict, logs: Path) -> list[tuple[str, float]]:
    """Time the .cu's compile command as CMake wrote it (launcher stripped), with --threads 1 and N."""
    obj = objects([cu])[0]
    cmds = subprocess.run(["ninja", "-C", str(build), "-t", "commands", obj], capture_output=True,
                          text=True, check=True).stdout.strip().splitlines()
    cmd = cmds[-1]
    argv = shlex.split(cmd.split("&&")[-1].strip()) if "&&" in cmd else shlex.split(cmd)
    if Path(argv[0]).name in ("sccache", "ccache"):
        argv = argv[1:]
    out = []
    for n in (1, threads):
        extra = [] if n == 1 else ["--threads", str(n)]
        start = time.monotonic()
        proc = subprocess.run(argv[:1] + extra + argv[1:], cwd=build, env={**os.environ, **env},
                              capture_output=True, text=True)
        took = time.monotonic() - start
        (logs / f"nvcc-threads-{n}.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise SystemExit(f"nvcc failed (--threads {n}); see {logs}/nvcc-threads-{n}.log")
        out.append((f"--threads {n}" if n > 1 else "no --threads", took))
        print(f"nvcc {cu} {out[-1][0]}: {took:.1f}s", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, help="an unpacked fork tree (default: unpack the fixture "
                    "into .tmp/bench/fork)")
    ap.add_argument("--launcher", default="sccache", choices=("sccache", "ccache"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--nvcc-threads", type=int, default=0, metavar="N",
                    help="also time one six-arch .cu with nvcc --threads N against none")
    ap.add_argument("--skip-cache", action="store_true", help="only the --nvcc-threads measurement")
    args = ap.parse_args(argv)

    src = (args.src or unpack_fork(WORK / "fork")).resolve()
    header = src / TOUCH_HEADER
    build = WORK / f"build-{args.launcher}"
    logs = WORK / f"logs-{args.launcher}"
    cache_dir = WORK / f"cache-{args.launcher}"
    launcher = compiler_cache.choose(args.launcher)
    env = cache_env(launcher.name, cache_dir)
    cuda_root = cuda_root_step.assemble_cuda_root(python=sys.executable)
    env_all = {**cuda_root.env, **env}
    print(f"fork tree {src}; {len(CC_LIGHT) + len(CC_HEAVY)} .cc + {len(CU)} .cu "
          f"(archs {RELEASE_CUDA_ARCH}); launcher {launcher.path}; cache {cache_dir}; "
          f"jobs {args.jobs}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)

    rows = []
    if not args.skip_cache:
        compiler_cache.stop_server(launcher, env_all)
        shutil.rmtree(cache_dir, ignore_errors=True)
        cache_dir.mkdir(parents=True)
        for phase in ("cold", "warm", "touched"):
            if phase in ("cold", "warm"):
                shutil.rmtree(build, ignore_errors=True)
                conf_s = configure_tree(src, build, launcher, cuda_root, logs / phase)
            else:
                conf_s = 0.0
                os.utime(header)
            load = os.getloadavg()[0]
            res = compile_set(build, launcher, env_all, args.jobs, logs / phase, src)
            st = compiler_cache.LauncherStats.from_json(res.launcher)
            rows.append((phase, conf_s, res.seconds, res.steps_run, st, load))
            print(f"{phase}: configure {conf_s:.1f}s, compile {res.seconds:.1f}s, "
                  f"{st.summary()}", flush=True)
        compiler_cache.stop_server(launcher, env_all)

    threads = []
    if args.nvcc_threads:
        tbuild = build if build.exists() else None
        if tbuild is None:
            tbuild = WORK / "build-threads"
            configure_tree(src, tbuild, compiler_cache.choose("none"), cuda_root, logs / "threads")
        threads = nvcc_threads(tbuild, CU[0], args.nvcc_threads, cuda_root.env, logs)

    print()
    print(f"=== compiler cache on real fork objects ({launcher.name}, {len(SOURCES)} objects, "
          f"-j{args.jobs}, {os.cpu_count()} cores) ===")
    if rows:
        cold = rows[0][2]
        print(f"{'phase':<8} {'configure':>9} {'compile':>9} {'vs cold':>8} {'steps':>5} {'requests':>8} "
              f"{'hits':>5} {'misses':>6} {'load1':>5}")
        for phase, conf_s, secs, steps, st, load in rows:
            print(f"{phase:<8} {conf_s:>8.1f}s {secs:>8.1f}s {secs / cold:>7.1%} {steps:>5} "
                  f"{st.requests:>8} {st.hits:>5} {st.misses:>6} {load:>5.1f}")
        warm = rows[1][2] / cold
        print(f"warm rebuild = {warm:.1%} of cold (target <= 10%: {'MET' if warm <= 0.10 else 'MISSED'}); "
              f"touched {TOUCH_HEADER} = {rows[2][2] / cold:.1%} of cold")
    if threads:
        (n1, t1), (nn, tn) = threads
        print(f"nvcc one six-arch .cu ({CU[0]}): {n1} {t1:.1f}s, {nn} {tn:.1f}s = {tn / t1:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
