"""Which kernel mechanism stops a build whose parent is SIGKILLed? (issue 33, docs/faults_issue33.md)

A Python parent runs ``cmake --build -j2`` on a configured copy of selftest/sample_mxnet whose
compile has a step that sleeps; the parent is SIGKILLed while the step runs, and the step is looked
for 2 s later. Tried: nothing, PR_SET_PDEATHSIG on the child cmake, PR_SET_CHILD_SUBREAPER on the
parent, and SIGKILL to the parent's whole process group. Run: ``.venv/bin/python -m tools.orphan_mechanisms``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_steps import configure, launcher
from build_steps.profile_data import PROFILES
from build_steps.arch import Arch
from selftest.fixtures_build import copy_sample_tree, slow_compile_edit

SECONDS = "309.5"
PLAIN = "import subprocess,sys; subprocess.run(['cmake','--build',sys.argv[1],'-j2'])"
PDEATHSIG = ("import ctypes,signal,subprocess,sys; libc=ctypes.CDLL(None, use_errno=True)\n"
             "subprocess.run(['cmake','--build',sys.argv[1],'-j2'], preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))")
SUBREAPER = ("import ctypes,subprocess,sys; libc=ctypes.CDLL(None, use_errno=True); libc.prctl(36, 1)\n"
             "subprocess.run(['cmake','--build',sys.argv[1],'-j2'])")


def _with_arg(arg: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and arg.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def trial(build: Path, name: str, code: str, whole_group: bool = False) -> str:
    (build / "slow.stamp").unlink(missing_ok=True)
    parent = subprocess.Popen([sys.executable, "-c", code, str(build)], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not _with_arg(SECONDS) and time.monotonic() < deadline:
        time.sleep(0.2)
    (os.killpg if whole_group else os.kill)(parent.pid, signal.SIGKILL)
    parent.wait()
    time.sleep(2)
    left = _with_arg(SECONDS)
    groups = sorted({os.getpgid(p) for p in left if Path(f"/proc/{p}").exists()})
    _kill(left)
    _kill(_with_arg(str(build)))  # cmake --build BUILD, ninja -C BUILD
    return (f"{name}: the compile step {'still runs' if left else 'is gone'} 2 s after the parent's SIGKILL"
            + (f" (process group {groups}, the parent's was {parent.pid})" if left else ""))


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="orphan-mechanisms-"))
    src = copy_sample_tree(tmp / "src", slow_compile_edit(float(SECONDS)))
    build = tmp / "build"
    configure.configure(src, build, PROFILES["cpu"], Arch(), build / "logs",
                        extra_defs=launcher.cmake_defines(launcher.Launcher("none", None, "none")))
    print(trial(build, "nothing", PLAIN))
    print(trial(build, "PR_SET_PDEATHSIG=SIGKILL on cmake", PDEATHSIG))
    print(trial(build, "PR_SET_CHILD_SUBREAPER on the parent", SUBREAPER))
    print(trial(build, "SIGKILL to the parent's process group", PLAIN, whole_group=True))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
