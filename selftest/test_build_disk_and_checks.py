"""Disk faults named by the path that filled, checks that see what the build sees, and the
smaller promises of issue 33 (the build's own counter, resuming, the step line, the install's
pulse, a compiler error shown once).

Small and read-only filesystems are real mounts (tmpfs, a read-only bind mount): in a mount
namespace of the child's own (``unshare -m``), or mounted for the test and unmounted after it.
"""
from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from build_steps import configure as configure_step
from build_steps import cuda_root, filesystem, launcher, preflight
from build_steps.compile import compile_mxnet
from build_steps.errors import StepError
from build_steps.heartbeat import heartbeat
from build_steps.profile_data import PROFILES
from build_steps.arch import Arch
from build_steps.build_chain import guarded, step_times
from selftest.test_build_faults import HAS_NVCC, HAS_SCCACHE, MOUNTS, _harness, _in_namespace, _say_lines

CPU = PROFILES["cpu"]
NONE = launcher.Launcher("none", None, "none")


def _run(cmd, tmp_path, env=None, timeout=300):
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout + proc.stderr


# --- 3. disk and paths ---------------------------------------------------------------------------

@MOUNTS
def test_a_full_disk_at_the_lock_write_is_one_usage_error_and_leaves_no_empty_note(sample_tree, tmp_path):
    src = sample_tree()
    small = tmp_path / "small"
    small.mkdir()
    build = small / "build"
    q = shlex.quote
    harness = shlex.join(_harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu",
                                  f"--build-dir={build}"))
    script = (f"mount -t tmpfs -o size=1m tmpfs {q(str(small))}; mkdir {q(str(build))}; "
              f"head -c 2M /dev/zero > {q(str(small / 'filler'))} 2>/dev/null || true; "
              f"{harness}; rc=$?; echo LEFT: $(ls -A {q(str(build))}); exit $rc")
    rc, out = _run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], tmp_path)
    _say_lines("full disk at the lock write", out)
    assert rc == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out and "Errno 28" not in out and "Traceback" not in out, out[-3000:]
    assert f"cannot lock the build dir {build}: no space left on {small} (tmpfs)" in out, out[-3000:]
    assert "pass --build-dir=DIR" in out, out[-3000:]
    left = out.split("LEFT:")[-1].split()
    assert ".harness-lock.owner" not in left and not any(n.endswith(".partial") for n in left), left


@MOUNTS
def test_a_full_tmpdir_during_compile_is_named_as_tmpdir(sample_tree, small_fs, tmp_path, monkeypatch):
    """gcc writes its .s to TMPDIR: a full TMPDIR fails the compile with the build dir roomy.
    The message names TMPDIR's filesystem and the variable that moves it."""
    src = sample_tree()
    build = tmp_path / "build"
    configure_step.configure(src, build, CPU, Arch(), build / "harness-logs",
                             extra_defs=launcher.cmake_defines(NONE))
    tmp = small_fs(8)
    small_fs.fill(tmp, 4)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    filesystem.place(build, "--build-dir=DIR")
    try:
        with pytest.raises(StepError) as caught:
            guarded("compile", lambda: compile_mxnet(build, 1, build / "harness-logs", progress=io.StringIO(),
                                                     env={"TMPDIR": str(tmp)}, src=src), build)()
    finally:
        filesystem.forget_places()
    first = str(caught.value).splitlines()[0]
    print(first)
    assert first.startswith("[compile] stopped at [") and f"no space left on {tmp} (tmpfs)" in first, first
    assert "set TMPDIR=DIR" in first and "--build-dir" not in first, first


@MOUNTS
@pytest.mark.parametrize("place", ["TMPDIR", "MXNET_HARNESS_CACHE"])
def test_each_filesystem_the_build_needs_is_checked_up_front_with_its_own_figure(sample_tree, tmp_path, place):
    if place == "MXNET_HARNESS_CACHE" and not HAS_SCCACHE:
        pytest.skip("the harness cache is needed by an sccache build")
    src = sample_tree()
    small = tmp_path / "small"
    small.mkdir()
    launcher_choice = "--compiler-launcher=sccache" if place == "MXNET_HARNESS_CACHE" else "--compiler-launcher=none"
    cmd = _in_namespace(f"mount -t tmpfs -o size=2m tmpfs {shlex.quote(str(small))}",
                        _harness(tmp_path, "-m", "release", f"--mxnet-src={src}", "--flavor=cpu",
                                 f"--build-dir={tmp_path / 'build'}", launcher_choice))
    rc, out = _run(cmd, tmp_path, env={place: str(small)})
    _say_lines(f"{place} on a 2 MB filesystem", out)
    # TMPDIR's figure is per compile in flight; the cache's objects scale with the tree's 8 sources
    figure = {"TMPDIR": CPU.tmp_space_gib,
              "MXNET_HARNESS_CACHE": CPU.cache_space_gib * 8 / CPU.space_sources}[place]
    what = {"TMPDIR": "TMPDIR", "MXNET_HARNESS_CACHE": "the harness cache"}[place]
    assert rc == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert f"free on {small} (tmpfs) for {what} {small}; a cpu build of 8 sources needs " \
        f"{filesystem.human(int(figure * filesystem.GIB))}" in out, out[-3000:]
    assert f"set {place}=DIR" in out and "Traceback" not in out, out[-3000:]
    assert not (tmp_path / "build" / "CMakeCache.txt").exists()


CUDA = PROFILES["cuda"]


def _hold_wheels(cache: Path) -> Path:
    """``cache`` as install_wheels leaves it once the cuda profile's locked wheels are in: its own
    directory with its own completion marker (the wheels themselves are not what preflight reads)."""
    held = cuda_root.wheels_dir(cache, CUDA.cuda)
    held.mkdir(parents=True)
    (held / ".complete").write_text("[]")
    return held


def test_the_space_a_build_needs_scales_with_the_tree_and_skips_wheels_the_cache_holds(sample_tree, fork_pristine,
                                                                                     tmp_path):
    """The fork's measured figures are for its 2453 sources; the sample tree's 8 need the build
    dir's floor and a sliver of compiler cache. The CUDA wheels count only until the cache holds them."""
    cache = tmp_path / "cache"
    assert preflight.source_count(fork_pristine) == CUDA.space_sources == 2453

    def needs(src, **kw):
        count, places = preflight.space_needs(src, CUDA, tmp_path / "build", cache=cache, **kw)
        return count, {p.what: p.need for p in places}

    gib = filesystem.GIB
    count, fork = needs(fork_pristine, cuda_wheels=True, compiler_cache=True)
    assert fork == {"the build dir": int(6.0 * gib), "TMPDIR": int(1.0 * gib),
                    "the harness cache": int((3.0 + 3.0) * gib)}, fork
    sample_src = sample_tree()
    count, sample = needs(sample_src, cuda_wheels=True, compiler_cache=True)
    assert count == 8
    assert sample == {"the build dir": int(1.0 * gib), "TMPDIR": int(1.0 * gib),
                      "the harness cache": int((3.0 * 8 / 2453 + 3.0) * gib)}, sample
    _hold_wheels(cache)  # the wheels once installed: objects only
    assert needs(sample_src, cuda_wheels=True, compiler_cache=True)[1]["the harness cache"] == int(3.0 * 8 / 2453 * gib)
    # neither wheels nor a compiler cache: the cache is not a place this build writes
    assert "the harness cache" not in needs(sample_src)[1]


@MOUNTS
def test_a_small_tree_fits_a_disk_the_fork_would_not(sample_tree, fork_pristine, small_fs, tmp_path):
    """CI's regression (stop 38): 12.6 GiB free refused the 8-source sample tree for the fork's
    13 GiB. On one 4 GiB filesystem holding the build dir, TMPDIR and the cache (wheels held),
    the sample tree goes ahead and the fork is refused with its own figures."""
    fs = small_fs(4096)
    cache = fs / "cache"
    held = _hold_wheels(cache)
    (fs / "tmp").mkdir()

    def refused(src):
        return preflight.build_dir_refusals(src, fs / "build", CUDA, tmp=fs / "tmp", cache=cache,
                                            cuda_wheels=True, compiler_cache=True)

    sample_src = sample_tree()
    assert refused(sample_src) == []
    (why,) = refused(fork_pristine)
    print(why)
    assert why.startswith(f"4.0 GiB free on {fs} (tmpfs); a cuda build of 2453 sources needs 10.0 GiB there "
                          f"(6.0 GiB for the build dir {fs / 'build'} + 1.0 GiB for TMPDIR {fs / 'tmp'} + "
                          f"3.0 GiB for the harness cache {cache})"), why
    assert "pass --build-dir=DIR or set TMPDIR=DIR or set MXNET_HARNESS_CACHE=DIR" in why, why
    # without the wheels the sample tree needs their 3 GiB too: 5.0 GiB, refused on 4
    shutil.rmtree(held)
    (why,) = refused(sample_src)
    assert "a cuda build of 8 sources needs 5.0 GiB there" in why, why


@pytest.fixture
def read_only_dir(tmp_path):
    if not (os.geteuid() == 0 and shutil.which("mount")):
        pytest.skip("a read-only bind mount needs root")
    where = tmp_path / "ro"
    where.mkdir()
    subprocess.run(["mount", "--bind", str(where), str(where)], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", str(where)], check=True)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_an_unwritable_compiler_cache_is_warned_about(read_only_dir, tmp_path):
    said = launcher.cache_warning({"SCCACHE_DIR": str(read_only_dir)})
    assert said.startswith(f"the compiler cache {read_only_dir} cannot be written (read-only file system"), said
    assert "cache nothing" in said and "Set SCCACHE_DIR" in said, said
    assert launcher.cache_warning({"SCCACHE_DIR": str(tmp_path / "rw")}) == ""


# --- 4. checks that see what the build sees ------------------------------------------------------

def _dotfiles_only(root: Path):
    sub = root / "3rdparty" / "dmlc-core"
    for entry in sub.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()  # `rm -rf dir/*`: dotfiles stay
    (sub / ".gitignore").write_text("build/\n")
    (sub / ".github").mkdir()
    (sub / ".github" / "ci.yml").write_text("on: push\n")


def _header_gone(root: Path):
    (root / "3rdparty" / "dmlc-core" / "include" / "dmlc" / "base.h").unlink()


@pytest.mark.parametrize("edit,said", [(_dotfiles_only, "3rdparty/dmlc-core: empty or missing"),
                                       (_header_gone, "3rdparty/dmlc-core: lacks include/dmlc/base.h, which "
                                                      "the build reads")], ids=["dotfiles-only", "header-gone"])
def test_a_committed_submodule_without_what_the_build_reads_is_refused(gates, sample_tree, edit, said):
    src = sample_tree(edit=edit)  # committed: git sees nothing to complain about
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", "--compiler-launcher=none")
    out = result.stdout.str() + result.stderr.str()
    _say_lines(f"submodule {said.split(':')[1].strip()[:20]}", out)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "lacks submodules the build needs" in out and said in out, out[-3000:]
    assert not any(src.glob("build*/CMakeCache.txt")) and not any(src.parent.glob("src-build*/CMakeCache.txt")), "nothing may be configured after the refusal"


def test_an_old_nvcc_is_named_with_its_version_and_the_minimum_first(tmp_path):
    said = preflight.version_refusal(Path("/opt/cuda-12.4/bin/nvcc"), (12, 4), "13.0")
    assert said.startswith("/opt/cuda-12.4/bin/nvcc is nvcc 12.4; this build needs nvcc 13.0 or newer"), said
    assert "arch" not in said, "the version is the cause, not the arch list"
    assert preflight.version_refusal(Path("nvcc"), (13, 0), "13.0") == ""


@pytest.mark.skipif(not HAS_NVCC, reason="a real nvcc is asked its version")
def test_the_real_nvcc_says_its_version():
    nvcc = preflight.nvcc_for_build({})
    version = preflight.nvcc_version(nvcc)
    assert version is not None and version >= (13, 0), version
    assert preflight.version_refusal(nvcc, version, PROFILES["cuda"].nvcc_minimum) == ""


# --- 5. the smaller points -----------------------------------------------------------------------

def _glob_recheck(path: Path):
    cm = path / "CMakeLists.txt"
    cm.write_text(cm.read_text().replace("file(GLOB nnvm_sources ", "file(GLOB nnvm_sources CONFIGURE_DEPENDS ", 1))


def test_the_progress_counter_is_the_builds_own_not_the_glob_recheck(sample_tree, tmp_path):
    src = sample_tree(edit=_glob_recheck)
    build = tmp_path / "build"
    configure_step.configure(src, build, CPU, Arch(), build / "harness-logs",
                             extra_defs=launcher.cmake_defines(NONE))
    shown = io.StringIO()
    result = compile_mxnet(build, 2, build / "harness-logs", progress=shown, src=src)
    log = (build / "harness-logs" / "compile.log").read_text()
    assert re.search(r"^\[0/2\] Re-checking globbed directories", log, re.M), "ninja's glob step ran"
    assert "[0/2]" not in shown.getvalue(), shown.getvalue()
    assert result.total_steps > 2 and result.steps_run == result.total_steps, result


def test_a_resumed_compile_says_how_many_steps_are_left(sample_tree, tmp_path):
    src = sample_tree()
    build = tmp_path / "build"
    configure_step.configure(src, build, CPU, Arch(), build / "harness-logs",
                             extra_defs=launcher.cmake_defines(NONE))
    whole = compile_mxnet(build, 2, build / "harness-logs", progress=io.StringIO(), src=src)
    # an interrupted build: some objects gone, the log's last compile unfinished
    objects = sorted(build.rglob("*.o"))[:3]
    for o in objects:
        o.unlink()
    log = build / "harness-logs" / "compile.log"
    log.write_text(log.read_text() + "==== compile run (interrupted) ====\n==== interrupted at [5/40] ====\n")
    shown = io.StringIO()
    again = compile_mxnet(build, 2, build / "harness-logs", progress=shown, src=src)
    m = re.search(r"^\[compile\] resuming: (\d+) of (\d+) steps left$", shown.getvalue(), re.M)
    assert m, shown.getvalue()
    assert int(m.group(1)) == again.total_steps < int(m.group(2)) and int(m.group(2)) >= whole.total_steps, m.group(0)
    # a build that finished says nothing of resuming
    for o in objects[:1]:
        o.unlink()
    shown = io.StringIO()
    compile_mxnet(build, 2, build / "harness-logs", progress=shown, src=src)
    assert "resuming" not in shown.getvalue(), shown.getvalue()


def _long_error(path: Path):
    body = "\n".join(f"int f{i}() {{ return undeclared_{i}; }}" for i in range(40))
    (path / "src" / "c_api.cc").write_text((path / "src" / "c_api.cc").read_text() + "\n" + body + "\n")


def test_a_long_compiler_error_is_shown_once_and_whole(sample_tree, tmp_path):
    src = sample_tree(edit=_long_error)
    build = tmp_path / "build"
    configure_step.configure(src, build, CPU, Arch(), build / "harness-logs",
                             extra_defs=launcher.cmake_defines(NONE))
    with pytest.raises(StepError) as caught:
        compile_mxnet(build, 1, build / "harness-logs", progress=io.StringIO(), src=src)
    text = str(caught.value)
    for i in (0, 17, 39):  # first, middle, last of gcc's errors
        assert len(re.findall(f"undeclared_{i}.? was not declared", text)) == 1, text
    assert text.count("FAILED: ") == 1, text


def test_the_install_is_in_the_step_line_after_an_interrupt():
    records = {"configure": {"result": {"seconds": 1.0}}, "compile": {"result": {"seconds": 2.0, "steps_run": 3}},
               "stage": {"result": {"seconds": 0.5}}, "built_wheel": {"result": {"seconds": 0.7}}}
    after = {"install": {"failed": True, "interrupted": True,
                         "error": "[install] interrupted by signal SIGHUP after 12s; its processes were stopped"}}
    line = ", ".join(step_times(records, after))
    assert line.endswith("install INTERRUPTED (interrupted by signal SIGHUP after 12s; re-run to resume)"), line
    assert "package 0.7s" in line


def test_a_quiet_install_has_a_pulse(tmp_path):
    log = tmp_path / "install.log"
    log.write_text("Collecting numpy\n")
    said = []
    with heartbeat("install", log, said.append, every=0.2):
        time.sleep(0.5)
        log.write_text("Collecting numpy\nDownloading scipy_openblas32-0.3.33.whl\n")
        time.sleep(0.5)
    assert said and all(re.match(r"\[install\] \d+s: ", s) for s in said), said
    assert said[-1].endswith("Downloading scipy_openblas32-0.3.33.whl"), said
    assert not [t for t in threading.enumerate() if t.name == "install-heartbeat"], "the pulse outlived the step"


@MOUNTS
def test_a_full_venv_dir_at_the_install_names_the_venv_dir(sample_tree, tmp_path):
    """pip unpacks the ~75 MB wheel into --venv-dir: on a 24 MB filesystem it fails with "No space
    left on device", which is said as that filesystem, with the option that moves it."""
    src = sample_tree()
    small = tmp_path / "small"
    small.mkdir()
    venv_dir = small / "venv"
    cmd = _in_namespace(f"mount -t tmpfs -o size=24m tmpfs {shlex.quote(str(small))}",
                        _harness(tmp_path, "-m", "release", "-k", "test_mxnet_resolves_inside_venv",
                                 f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", "--compiler-launcher=none",
                                 f"--build-dir={tmp_path / 'build'}", f"--venv-dir={venv_dir}", "--no-deps"))
    rc, out = _run(cmd, tmp_path, timeout=900)
    _say_lines("full --venv-dir at the install", out)
    assert rc == 3, out[-3000:]  # the host's disk, not the wheel: not judged (issue 42 item 4)
    # the venv's creation (its pip) or the wheel's install, whichever fills it first
    said = [line for line in out.splitlines() if line.startswith(("[venv] ", "[install] ")) and "no space left on" in line]
    assert said, out[-3000:]
    assert f"no space left on {small} (tmpfs)" in said[0] and "pass --venv-dir=DIR" in said[0], said
    assert "Traceback" not in out and "install FAILED" in out, out[-3000:]


# --- TMPDIR and HOME (issue 42 item 5) -------------------------------------------------------------

@MOUNTS
@pytest.mark.parametrize("fault", ["missing", "read-only", "full"])
def test_a_missing_read_only_or_full_tmpdir_is_refused_before_configure_in_one_line(sample_tree, small_fs,
                                                                                     tmp_path, fault):
    """Python's tempfile silently skips a TMPDIR it cannot write (and /tmp was measured instead);
    the sandbox and the compilers use TMPDIR as set. The check looks where they will write."""
    src = sample_tree()
    if fault == "missing":
        tmp = tmp_path / "no-such-tmp"
    else:
        tmp = small_fs(8)
        small_fs.fill(tmp, 0)
    cmd = _harness(tmp_path, "-m", "release and build", "-k", "toggles", f"--mxnet-src={src}", "--flavor=cpu")
    if fault == "read-only":
        small_fs.fill(tmp, 4096)  # room enough: only the mount says no
        cmd = _in_namespace(f"mount -o remount,ro {shlex.quote(str(tmp))}", cmd)
    rc, out = _run(cmd, tmp_path, env={"TMPDIR": str(tmp)})
    _say_lines(f"TMPDIR {fault}", out)
    assert rc == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    said = [line for line in out.splitlines() if str(tmp) in line]
    assert len(said) == 1 and "TMPDIR" in said[0], out[-3000:]
    assert {"missing": "does not exist", "read-only": "read-only file system",
            "full": "free on"}[fault] in said[0], said
    assert "Traceback" not in out and not (src.parent / "src-build-cpu" / "CMakeCache.txt").exists(), out[-3000:]


@MOUNTS
def test_a_configure_killed_by_a_full_tmpdir_blames_tmpdir_and_is_configured_afresh_next_time(sample_tree,
                                                                                             small_fs, tmp_path):
    """A full TMPDIR fails CMake's try-compiles: the cache keeps CMAKE_EXECUTABLE_FORMAT=Unknown, and a
    refresh would keep it. The failure names TMPDIR's filesystem, and the next configure starts afresh."""
    src = sample_tree()
    tmp = small_fs(8)
    small_fs.fill(tmp, 0)
    build = tmp_path / "build"
    env = {"TMPDIR": str(tmp)}
    with pytest.raises(StepError) as caught:  # as the chain runs the step (build_steps.build_chain.guarded)
        guarded("configure", lambda: configure_step.configure(src, build, CPU, Arch(), build / "harness-logs",
                                                              env=env), build)()
    first = str(caught.value).splitlines()[0]
    assert f"no space left on {tmp} (tmpfs)" in first and "set TMPDIR=DIR" in first, first
    (tmp / "filler").unlink()
    result = configure_step.configure(src, build, CPU, Arch(), build / "harness-logs", env=env)
    assert result.first_time, "the half-made cache must not be refreshed"
    assert any("did not finish" in n and "afresh" in n for n in result.notes), result.notes
    assert result.cache["CMAKE_EXECUTABLE_FORMAT"] == "ELF"


@MOUNTS
def test_a_read_only_home_is_refused_naming_the_variables_that_move_the_cache(sample_tree, tmp_path):
    """~/.cache holds the CUDA wheels a --cuda-from-wheels build downloads: a read-only HOME is
    moved by MXNET_HARNESS_CACHE or XDG_CACHE_HOME, not by --build-dir or TMPDIR."""
    src = sample_tree()
    home = tmp_path / "home"
    home.mkdir()
    cmd = _in_namespace(f"mount --bind -o ro {shlex.quote(str(home))} {shlex.quote(str(home))}",
                        _harness(tmp_path, "-m", "release and build", "-k", "toggles", f"--mxnet-src={src}",
                                 "--cuda-from-wheels"))
    env = {k: v for k, v in os.environ.items() if k not in ("MXNET_HARNESS_CACHE", "XDG_CACHE_HOME")}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300, env={**env, "HOME": str(home)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    said = [line for line in out.splitlines() if str(home) in line]
    assert len(said) == 1 and "read-only file system" in said[0], out[-3000:]
    assert "MXNET_HARNESS_CACHE=DIR" in said[0] and "XDG_CACHE_HOME=DIR" in said[0], said
    assert "--build-dir" not in said[0] and "TMPDIR" not in said[0], said
    assert "Traceback" not in out and not (src.parent / "src-build" / "CMakeCache.txt").exists(), out[-3000:]
