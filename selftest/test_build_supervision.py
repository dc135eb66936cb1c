"""A build cannot outlive its run, and never writes into the source tree (issue 33).

Every run is a child pytest of the real harness (real CMake, Ninja, gcc) against a committed copy
of selftest/sample_mxnet whose compile has a step that sleeps for minutes (fixtures_build). "Left
running" is judged three ways after the run ends: the processes carrying this test's mark in
their environment, those in the child's process group, and those working under its build dir or
source tree (``ps`` by group and by cwd). Each test prints ``fault-lines <name>: N``.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from selftest.fixtures_build import slow_compile_edit
from selftest.test_build_faults import (HAS_NVCC, HAS_SCCACHE, MOUNTS, _harness, _in_namespace, _kill_marked,
                                        _marked, _marked_env, _say_lines, _slow_cu, _wait_for)


def _procs() -> dict[int, tuple[int, Path, str]]:
    """pid -> (process group, cwd, executable name) of every live, non-zombie process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] == "Z":
                continue
            found[int(entry.name)] = (int(stat[2]), Path(os.readlink(entry / "cwd")),
                                      Path(os.readlink(entry / "exe")).name)
        except (OSError, IndexError, ValueError):
            continue
    return found


def _left(pgid: int, *dirs: Path) -> dict[int, str]:
    """What is still running of a run: its process group, or working under ``dirs``."""
    dirs = [d.resolve() for d in dirs]
    return {pid: name for pid, (group, cwd, name) in _procs().items()
            if pid != os.getpid() and (group == pgid or any(cwd == d or d in cwd.parents for d in dirs))}


def _nothing_left(mark: str, pgid: int, *dirs: Path, limit: float = 15) -> dict:
    _wait_for(lambda: not _marked(mark) and not _left(pgid, *dirs), limit)
    return {**_marked(mark), **_left(pgid, *dirs)}


def _watchdog_of(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"build_steps.supervise" in argv and str(pid).encode() in argv:
                return int(entry.name)
    return None


def _start(tmp_path: Path, src: Path, build: Path, mark: str, log: Path, *extra) -> subprocess.Popen:
    cmd = _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2",
                   "--compiler-launcher=none", f"--build-dir={build}", *extra)
    with open(log, "w") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env=_marked_env(mark), start_new_session=True)


def _sleeping(mark: str, seconds: str) -> list[int]:
    """The slow compile step's ``sleep`` of this mark (found by its argument)."""
    out = []
    for pid in _marked(mark):
        try:
            if seconds.encode() in (Path(f"/proc/{pid}/cmdline")).read_bytes().split(b"\0"):
                out.append(pid)
        except OSError:
            continue
    return out


# --- 1. the run's processes die with it ---------------------------------------------------------

def test_sigkill_of_the_run_leaves_nothing_running(sample_tree, tmp_path):
    src = sample_tree(edit=slow_compile_edit(317.5))
    build, mark, log = tmp_path / "build", uuid.uuid4().hex, tmp_path / "run.log"
    proc = _start(tmp_path, src, build, mark, log)
    try:
        assert _wait_for(lambda: _sleeping(mark, "317.5"), 300, proc), log.read_text()[-3000:]
        os.kill(proc.pid, signal.SIGKILL)  # no handler runs: what stops the build is the watchdog
        rc = proc.wait(timeout=30)
        left = _nothing_left(mark, proc.pid, build, src)
    finally:
        os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
        _kill_marked(mark)
    _say_lines("SIGKILL of the run", log.read_text())
    assert rc == -signal.SIGKILL
    assert not left, f"left running after the run was killed: {left}"


def test_a_takeover_stops_what_a_dead_run_left_and_names_it(sample_tree, tmp_path):
    """The run and its watchdog both killed (a lost machine's worth): the orphans go on until the
    next run on the build dir takes the lock over, which stops them before it builds. The first run
    is unsandboxed: in the sandbox bwrap's --die-with-parent already ends the compile with the run,
    so only a --no-sandbox run (or a sandbox whose bwrap was killed too) leaves such orphans."""
    src = sample_tree(edit=slow_compile_edit(316.5))
    build, mark, log = tmp_path / "build", uuid.uuid4().hex, tmp_path / "first.log"
    first = _start(tmp_path, src, build, mark, log, "--no-sandbox")
    second = None
    try:
        assert _wait_for(lambda: _sleeping(mark, "316.5"), 300, first), log.read_text()[-3000:]
        owner = (build / ".harness-lock.owner").read_text()
        assert f'"pgid": {first.pid}' in owner and '"run_id": "' in owner, owner
        watchdog = _watchdog_of(first.pid)
        assert watchdog, "the run has no watchdog"
        os.kill(watchdog, signal.SIGKILL)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        time.sleep(1)
        orphans = _sleeping(mark, "316.5")
        assert orphans, "the fault this test is for: the dead run's compile goes on"
        log2 = tmp_path / "second.log"
        second = _start(tmp_path, src, build, mark + "-2", log2)
        assert _wait_for(lambda: _sleeping(mark + "-2", "316.5"), 300, second), log2.read_text()[-3000:]
        assert not _marked(mark), f"the dead run's processes outlived the takeover: {_marked(mark)}"
        second.send_signal(signal.SIGINT)
        rc = second.wait(timeout=60)
        left = _nothing_left(mark + "-2", second.pid, build, src)
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        _kill_marked(mark)
        _kill_marked(mark + "-2")
    out = log2.read_text()
    _say_lines("takeover of a dead run's build dir", out)
    assert rc == pytest.ExitCode.INTERRUPTED, out[-3000:]
    said = [line for line in out.splitlines() if "took over the lock of an earlier run" in line]
    assert len(said) == 1, out[-3000:]
    assert f"(pid {first.pid}, started " in said[0] and "no longer running" in said[0], said
    assert "stopped what it left running: " in said[0] and "sleep" in said[0], said
    # the holder's command as typed: `python -m pytest ...`, not `.../pytest/__main__.py ...`
    assert "-m pytest" in said[0] and "__main__.py" not in said[0], said
    assert not left, left


@pytest.mark.parametrize("signals", [["SIGHUP"], ["SIGINT", "SIGINT", "SIGINT"], ["SIGTERM", "SIGINT"]],
                         ids=["SIGHUP", "SIGINTx3", "SIGTERM+SIGINT"])
def test_hangup_and_repeated_interrupts_give_one_summary_and_exit_2(sample_tree, tmp_path, signals):
    seconds = {"SIGHUP": "315.5", "SIGINT": "314.5", "SIGTERM": "313.5"}[signals[0]]
    src = sample_tree(edit=slow_compile_edit(float(seconds)))
    build, mark, log = tmp_path / "build", uuid.uuid4().hex, tmp_path / "run.log"
    proc = _start(tmp_path, src, build, mark, log)
    try:
        assert _wait_for(lambda: _sleeping(mark, seconds), 300, proc), log.read_text()[-3000:]
        for name in signals:
            proc.send_signal(getattr(signal, name))
            time.sleep(0.15)
        rc = proc.wait(timeout=60)
        left = _nothing_left(mark, proc.pid, build, src)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(mark)
    out = log.read_text()
    _say_lines(f"{'+'.join(signals)} during compile", out)
    assert rc == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt\n" not in out.split("compile INTERRUPTED")[-1], out[-3000:]
    assert out.count("RELEASE no wheel: compile INTERRUPTED") == 1, out[-3000:]
    assert not left, f"left running: {left}"


# --- 2. the source tree stays read-only ----------------------------------------------------------

def _snapshot(tree: Path) -> dict:
    return {str(p.relative_to(tree)): (p.lstat().st_mtime_ns, p.lstat().st_size)
            for p in tree.rglob("*") if ".git" not in p.relative_to(tree).parts[:1]}


@MOUNTS
def test_read_only_tree_builds_twice_at_once_into_two_build_dirs(sample_tree, tmp_path):
    """The whole chain (configure, compile, stage, package, the build and provenance gates) on a
    tree mounted read-only, two runs at once with their own build dirs: both pass, each wheel is
    in its own build dir's dist/, and the tree is byte for byte as it was."""
    src = sample_tree()
    before = _snapshot(src)
    mark = uuid.uuid4().hex
    procs, logs = [], []
    for k in (1, 2):
        cmd = _in_namespace(f"mount --bind -o ro {shlex.quote(str(src))} {shlex.quote(str(src))}",
                            _harness(tmp_path, "-m", "release and (build or provenance)", "-k", "not install",
                                     f"--mxnet-src={src}", "--flavor=cpu", "--jobs=1",
                                     "--compiler-launcher=none", f"--build-dir={tmp_path / f'build{k}'}"))
        logs.append(tmp_path / f"run{k}.log")
        with open(logs[-1], "w") as fh:
            procs.append(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path,
                                          env=_marked_env(mark), start_new_session=True))
    try:
        rcs = [p.wait(timeout=900) for p in procs]
        left = _nothing_left(mark, procs[0].pid, src, tmp_path / "build1", tmp_path / "build2")
        left.update(_left(procs[1].pid))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        _kill_marked(mark)
    outs = [log.read_text() for log in logs]
    for k, (rc, out) in enumerate(zip(rcs, outs), 1):
        _say_lines(f"read-only tree, build dir {k} of 2 at once", out)
        assert rc == 0, out[-3000:]
        assert "wheel passed " in out and str(tmp_path / f"build{k}" / "dist") in out, out[-3000:]
        assert len(list((tmp_path / f"build{k}" / "dist").glob("*.whl"))) == 1
    assert _snapshot(src) == before, "the run wrote into the source tree"
    status = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--ignored"],
                            capture_output=True, text=True).stdout
    assert status == "", status
    assert not left, left


# --- the sccache server and nvcc's temporaries ---------------------------------------------------

def _env_of(pid: int, key: str) -> str | None:
    try:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(key.encode() + b"="):
                return item.split(b"=", 1)[1].decode()
    except OSError:
        return None
    return None


@pytest.mark.skipif(not (HAS_SCCACHE and HAS_NVCC), reason="needs sccache and nvcc (CUDA 13)")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_cu_compile_through_sccache_leaves_no_server_and_no_nvcc_temporaries(sample_tree, tmp_path, sig,
                                                                              monkeypatch):
    monkeypatch.delenv("SCCACHE_SERVER_PORT", raising=False)  # the build's own server
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "cache"))
    src = sample_tree(edit=_slow_cu)
    build, mark, log = tmp_path / "build", uuid.uuid4().hex, tmp_path / "run.log"
    # --fast-compile: a development build keeps sccache in a .cu compile's chain (a release build's
    # leaves it out for reproducible objects, build_steps.deterministic_compile), so the server runs nvcc
    cmd = _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--cuda-from-wheels", "--jobs=2",
                   "--compiler-launcher=sccache", f"--build-dir={build}", "--fast-compile")
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path, env=_marked_env(mark),
                                start_new_session=True)
    try:
        assert _wait_for(lambda: "[compile] [" in log.read_text() and {"cicc", "ptxas"} & set(_marked(mark).values()),
                         600, proc), log.read_text()[-3000:]
        # the server (in its own sandbox since issue 29): the sccache process no client started
        server = next(p for p, n in _marked(mark).items() if n == "sccache" and _env_of(p, "TMPDIR")
                      and _env_of(p, "SCCACHE_START_SERVER") == "1")
        nvcc_tmp = Path(_env_of(server, "TMPDIR"))
        assert _wait_for(lambda: list(nvcc_tmp.glob("sccache_nvcc*")), 60), "nvcc's temporaries are in the run's dir"
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
        left = _nothing_left(mark, proc.pid, build, src)
        gone = _wait_for(lambda: not nvcc_tmp.exists(), 15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(mark)
    out = log.read_text()
    _say_lines(f"{sig.name} of a .cu compile through sccache", out)
    assert rc == (-signal.SIGKILL if sig == signal.SIGKILL else pytest.ExitCode.INTERRUPTED), out[-3000:]
    assert not left, f"left running: {left}"
    assert gone, f"the run's nvcc temporaries were left: {list(nvcc_tmp.glob('*'))}"
