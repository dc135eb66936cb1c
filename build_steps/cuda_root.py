"""``--cuda-from-wheels``: a CUDA root assembled from the nvcc install plus pip's nvidia-* wheels.

A host with only nvcc (no NVIDIA -dev packages) cannot configure MXNet: FindCUDAToolkit wants
cuBLAS & co. beside nvcc, FindCUDNN wants an *unversioned* ``libcudnn.so`` (pip's
nvidia-cudnn-cu13 ships only ``libcudnn.so.9``, and the fork then silently drops cuDNN), and
linking ``CUDA::cuda_driver`` needs a ``libcuda.so`` that only a driver install provides.

The root is a directory of symlinks: ``bin/`` holds a real copy of ``nvcc`` and its profile (nvcc
computes TOP from its own location, so the include/lib dirs it adds are the assembled ones),
``include/`` and ``lib64/`` merge the toolkit's entries with the wheels', dev links are added for
versioned-only libraries, and ``lib64/stubs/libcuda.so`` is a link-only stub built with gcc
(SONAME libcuda.so.1, never shipped: bundle.py's host policy skips it and the gates forbid it).
The wheels are installed once per requirement set with ``pip install --target`` into a cache that
survives runs, under a file lock. Which wheels, and their lock, are the profile's CUDA stack
(``[cuda_stacks.<name>]`` of profiles.toml: build_wheels, wheel_lock).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Protocol, Sequence, cast

from filelock import FileLock

from . import cuda_lock, processes
from .cuda_stack import CudaStack
from .errors import EnvironmentFault, StepError, log_tail
from .install_faults import environment_fault
from .once import JsonRecord
from .profile_data import only_cuda_profile

DEFAULT_NVCC_HOME = Path("/usr/local/cuda")

_STUB_SOURCE = """\
/* Link-only stand-in for the NVIDIA driver's libcuda.so.1: it exists so that linking
   CUDA::cuda_driver records DT_NEEDED libcuda.so.1. It is never loaded or shipped. */
int cuInit(unsigned int flags) { (void)flags; return 100; /* CUDA_ERROR_NO_DEVICE */ }
int cuDriverGetVersion(int *v) { if (v) *v = 0; return 0; }
int cuGetProcAddress(void) { return 100; }
int cuGetProcAddress_v2(void) { return 100; }
int cuDeviceGet(void) { return 100; }
int cuDeviceGetCount(int *n) { if (n) *n = 0; return 100; }
int cuCtxGetCurrent(void) { return 100; }
int cuModuleLoadData(void) { return 100; }
int cuLaunchKernel(void) { return 100; }
"""


class ProgressStream(Protocol):
    """Where the first download's lines go: a text stream (the harness's live terminal stream)."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


@dataclass(frozen=True)
class CudaRoot(JsonRecord):
    root: Path
    wheels_dir: Path
    cmake_args: dict[str, str]      # -D definitions for CMake (CUDAToolkit_ROOT, CUDNN_ROOT, NCCL_ROOT, ...)
    env: dict[str, str]             # environment additions for configure/compile
    #: this run's time to assemble it (the chain's row files it with the record; the page's timeline)
    seconds: float | None = None


def default_cache_dir() -> Path:
    env = os.environ.get("MXNET_HARNESS_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mxnet-release-harness"


def _stack(stack: CudaStack | None) -> CudaStack:
    """``stack``, or the one CUDA profile's when the caller names none."""
    if stack is not None:
        return stack
    # only_cuda_profile picks among cuda_profiles(), which hold only profiles with a CUDA stack
    return cast(CudaStack, only_cuda_profile("the CUDA root names no CUDA stack").cuda)


def find_nvcc_home(stack: CudaStack | None = None) -> Path:
    """The toolkit nvcc belongs to: $CUDA_HOME / $CUDA_PATH, /usr/local/cuda, or nvcc on PATH.
    ``stack``: the CUDA stack the build wants (named in the message when there is no nvcc)."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), str(DEFAULT_NVCC_HOME)]
    nvcc = shutil.which("nvcc")
    for c in candidates:
        if c and (Path(c) / "bin" / "nvcc").is_file():
            return Path(c).resolve()
    if nvcc:
        # /usr/local/bin/nvcc may be a wrapper script; ask nvcc where its TOP is.
        out = subprocess.run([nvcc, "-v", "--dryrun", "-c", "-x", "cu", "/dev/null", "-o", "/dev/null"],
                             capture_output=True, text=True)
        m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.M)
        if m:
            return Path(m.group(1).strip()).resolve()
    major = _stack(stack).major
    raise StepError("cuda-root", "no nvcc found (looked at $CUDA_HOME, $CUDA_PATH, /usr/local/cuda "
                    f"and PATH): install the CUDA {major} toolkit's nvcc (pip install nvidia-cuda-nvcc "
                    f"into /usr/local/cuda, or NVIDIA's cuda-nvcc-{major}-0 package)")


#: pip's lines worth showing while the ~3 GB of wheels come in (the rest goes to the log only).
_PIP_PROGRESS = re.compile(r"^(Collecting|Downloading|Installing collected|Successfully installed)")


def _wheels_dir_for(cache: Path, requirements_text: str) -> Path:
    """The cache directory of one requirement set (named by its text's hash)."""
    return cache / f"cuda-wheels-{hashlib.sha256(requirements_text.encode()).hexdigest()[:12]}"


def wheels_dir(cache: Path, stack: CudaStack, lock: Path | None = None) -> Path:
    """Where install_wheels puts ``stack``'s locked wheels (``lock``, default its wheel_lock) in ``cache``."""
    return _wheels_dir_for(cache, cuda_lock.requirements_text(cuda_lock.load(Path(lock or stack.wheel_lock))))


def wheels_held(cache: Path, stack: CudaStack) -> bool:
    """Whether ``cache`` already holds ``stack``'s locked wheels, installed whole."""
    return (wheels_dir(cache, stack) / ".complete").is_file()


def install_wheels(cache: Path, requirements: Sequence[str] | None = None, python: str | None = None,
                   find_links: Iterable[str | os.PathLike[str]] = (), index_url: str | None = None,
                   progress: ProgressStream | None = None,
                   lock: Path | None = None, no_index: bool = False,
                   stack: CudaStack | None = None) -> Path:
    """``pip install --target`` the locked CUDA wheels (``lock``, default the wheel_lock of
    ``stack``, the profile's CUDA stack) once; later calls reuse the directory. Either way the versions there must be the lock's
    (StepError naming both otherwise). ``requirements``: an unlocked requirement set instead (a
    development tool's; pip's own configuration then applies).

    The first time is a ~3 GB download: ``progress`` (a stream) gets a line saying so and pip's
    per-wheel lines as they come, so a long silence is not mistaken for a hang."""
    pins = None
    stack = _stack(stack)
    if requirements is None:
        lock = Path(lock or stack.wheel_lock)
        pins = cuda_lock.load(lock)
        target = _wheels_dir_for(cache, cuda_lock.requirements_text(pins))
    else:
        target = _wheels_dir_for(cache, json.dumps(sorted(requirements)))
    done = target / ".complete"
    cache.mkdir(parents=True, exist_ok=True)
    damage: list[str] = []
    with FileLock(str(target) + ".lock"):
        if done.exists():
            damage = cuda_lock.damaged(target)
            if not damage:
                _check_lock(target, pins, lock)
                return target
            # verified, not believed: a damaged entry is fetched again (pip's cache makes it quick)
            print(f"[cuda-root] the cached CUDA wheels in {target} are damaged ({_first(damage)}): "
                  "fetching them again", file=progress or sys.stderr, flush=True)
        if target.exists():
            shutil.rmtree(target)  # an interrupted install: start over rather than trust it
        log = cache / f"{target.name}.log"
        env = None
        if pins is not None:
            reqs = cache / f"{target.name}.requirements.txt"
            reqs.write_text(cuda_lock.requirements_text(pins))
            cmd = cuda_lock.pip_command(python or sys.executable, target, reqs, find_links, index_url, no_index)
            env = cuda_lock.pip_env()
            requirements = tuple(f"{p.name}=={p.version}" for p in pins)
        else:
            assert requirements is not None  # no pins: an unlocked requirement set was given
            cmd = [python or sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                   "--no-input", "--target", str(target), *requirements]
            for fl in find_links:
                cmd += ["--find-links", str(fl)]
            if index_url:
                cmd += ["--index-url", index_url]
        if progress is not None:
            print(f"[cuda-root] first use: downloading the CUDA {stack.major} wheels (~3 GB) into {target} "
                  f"(log: {log}); later runs reuse them", file=progress, flush=True)
        with open(log, "w", buffering=1) as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    bufsize=1, env=env)
            assert proc.stdout is not None  # stdout=PIPE
            try:
                for line in proc.stdout:
                    fh.write(line)
                    if progress is not None and _PIP_PROGRESS.match(line):
                        # whole lines: a line cut at a width ends mid-word (the terminal wraps it)
                        print(f"[cuda-root] {line.strip()}", file=progress, flush=True)
                proc.wait()
            except BaseException:  # an interrupt: pip and its build children stop with the step
                processes.stop_tree(proc)
                raise
        if proc.returncode != 0:
            # an index that does not answer or a full disk is the host's fault: not judged (issue 42)
            host = environment_fault(log.read_text(errors="replace"))
            if host:
                raise EnvironmentFault("cuda-root", f"pip could not install the CUDA wheels: {host}; pass "
                                       "--find-links/--index-url for an offline host, or fix the network or "
                                       "the disk and re-run", log=log, tail=log_tail(log))
            if damage:
                raise StepError("cuda-root", f"the cached CUDA wheels in {target} were damaged ({_first(damage)}) "
                                "and pip could not fetch them again: pass --find-links/--index-url for an offline "
                                "host, or copy a good cache there (MXNET_HARNESS_CACHE names another)",
                                log=log, tail=log_tail(log))
            raise StepError("cuda-root", "pip could not install the CUDA wheels "
                            f"({', '.join(requirements)}); pass --find-links/--index-url for an "
                            "offline host", log=log, tail=log_tail(log))
        still = cuda_lock.damaged(target)
        if still:
            raise StepError("cuda-root", f"the CUDA wheels pip just installed into {target} do not match their "
                            f"RECORD ({_first(still)}): the disk under it is failing or full; free or replace it "
                            "(MXNET_HARNESS_CACHE names another cache) and re-run", log=log)
        _check_lock(target, pins, lock)
        done.write_text(json.dumps(list(requirements)))
    return target


def _first(damage: list[str]) -> str:
    """The first damaged file, and how many more."""
    return damage[0] + (f", and {len(damage) - 1} more" if len(damage) > 1 else "")


def _check_lock(target: Path, pins: Iterable[cuda_lock.Pin] | None, lock: Path | None) -> None:
    """StepError when the wheels under ``target`` are not the lock's versions (names both)."""
    if pins is None:
        return
    wrong = cuda_lock.mismatches(target, pins)
    if wrong:
        raise StepError("cuda-root", f"the CUDA wheels in {target} are not the locked ones ({'; '.join(wrong)}); "
                        f"delete {target} and re-run, or update {lock} if the new versions are wanted")


def _link_entries(src_dir: Path, dest_dir: Path) -> None:
    """Symlink every entry of ``src_dir`` into ``dest_dir`` (first provider wins)."""
    if not src_dir.is_dir():
        return
    dest_dir.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src_dir.iterdir()):
        dest = dest_dir / entry.name
        if dest.exists() or dest.is_symlink():
            continue
        dest.symlink_to(entry.resolve() if not entry.is_symlink() else entry.resolve())


def _add_dev_links(lib_dir: Path) -> list[str]:
    """``libX.so -> libX.so.N`` for every library shipped only with a versioned name."""
    added = []
    by_stem: dict[str, list[str]] = {}
    for entry in lib_dir.iterdir():
        m = re.match(r"^(lib[^/]+?\.so)\.(\d+)(?:\.[\d.]+)?$", entry.name)
        if m:
            by_stem.setdefault(m.group(1), []).append(entry.name)
    for stem, names in by_stem.items():
        dev = lib_dir / stem
        if dev.exists() or dev.is_symlink():
            continue
        # link to the shortest name (the SONAME, libcudnn.so.9) rather than a full version
        dev.symlink_to(sorted(names, key=len)[0])
        added.append(stem)
    return added


def build_driver_stub(dest: Path, cc: str = "gcc") -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = dest.parent / "libcuda_stub.c"
    src.write_text(_STUB_SOURCE)
    proc = subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(dest), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise StepError("cuda-root", f"building the link-only libcuda.so stub failed: {proc.stderr.strip()}")
    return dest


def assemble_cuda_root(cache: Path | None = None, nvcc_home: Path | None = None,
                       requirements: Sequence[str] | None = None, python: str | None = None,
                       find_links: Iterable[str | os.PathLike[str]] = (), index_url: str | None = None,
                       progress: ProgressStream | None = None,
                       lock: Path | None = None, no_index: bool = False,
                       stack: CudaStack | None = None) -> CudaRoot:
    """Install (cached) the CUDA wheels of ``stack`` (the profile's CUDA stack) and assemble the
    root; returns the CMake definitions."""
    cache = Path(cache) if cache else default_cache_dir()
    nvcc_home = Path(nvcc_home) if nvcc_home else find_nvcc_home(stack)
    wheels = install_wheels(cache, requirements, python, find_links, index_url, progress, lock, no_index, stack)
    key = hashlib.sha256(f"{nvcc_home}|{wheels}".encode()).hexdigest()[:12]
    root = cache / f"cuda-root-{key}"
    with FileLock(str(root) + ".lock"):
        if not (root / ".complete").exists():
            if root.exists():
                shutil.rmtree(root)
            _assemble(root, nvcc_home, wheels / "nvidia")
            (root / ".complete").write_text(str(nvcc_home))
    cmake_args = {
        "CUDAToolkit_ROOT": str(root),
        "CMAKE_CUDA_COMPILER": str(root / "bin" / "nvcc"),
        "CUDNN_ROOT": str(root),
        "NCCL_ROOT": str(root),
    }
    env = {"CUDA_HOME": str(root), "CUDA_PATH": str(root)}
    return CudaRoot(root=root, wheels_dir=wheels, cmake_args=cmake_args, env=env)


def _assemble(root: Path, nvcc_home: Path, nvidia: Path) -> None:
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    # nvcc and its profile are copied, not linked: nvcc reads TOP from the directory it runs from.
    for name in ("nvcc", "nvcc.profile"):
        shutil.copy2(nvcc_home / "bin" / name, bin_dir / name)
    _link_entries(nvcc_home / "bin", bin_dir)
    for name in ("nvvm", "share", "extras", "nvml"):
        if (nvcc_home / name).exists():
            (root / name).symlink_to((nvcc_home / name).resolve())

    include, lib = root / "include", root / "lib64"
    _link_entries(nvcc_home / "include", include)
    _link_entries(nvcc_home / "lib64" if (nvcc_home / "lib64").exists() else nvcc_home / "lib", lib)
    if not nvidia.is_dir():
        raise StepError("cuda-root", f"{nvidia} missing: the CUDA wheels did not install nvidia/*")
    for pkg in sorted(nvidia.iterdir()):
        _link_entries(pkg / "include", include)
        _link_entries(pkg / "lib", lib)
    _add_dev_links(lib)
    build_driver_stub(lib / "stubs" / "libcuda.so")
    (root / "lib").symlink_to("lib64")
    targets = root / "targets" / "x86_64-linux"
    targets.mkdir(parents=True)
    (targets / "include").symlink_to("../../include")
    (targets / "lib").symlink_to("../../lib64")
