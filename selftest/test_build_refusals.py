"""Before the build, and when it fails or is stopped: the real-tree issue's promises.

Refusals come before anything is configured, in seconds, as one usage error (exit 4); a failed
step is one block and stops the run (exit 1); Ctrl-C or SIGTERM stops the whole build at once
(exit 2) and says where. Every run is a child pytest of the real harness against a committed copy
of selftest/sample_mxnet (real CMake, Ninja, gcc).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from build_steps.configure import _gencode_flags
from build_steps.errors import UsageError, log_excerpt
from build_steps.options import parse_cmake_defines
from selftest.conftest import HARNESS_ROOT, host_opencv
from selftest.fixtures_build import default_build, slow_compile_edit

HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
RELEASE_ARCH = "8.0;8.6;8.9;9.0;10.0;12.0+PTX"


def _out(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def _nothing_configured(src: Path) -> bool:
    """No CMake cache in the tree nor in the default build dirs beside it."""
    return not any(src.glob("build*/CMakeCache.txt")) and not any(src.parent.glob(f"{src.name}-build*/CMakeCache.txt"))


# --- refused before configure ------------------------------------------------------------------

@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_dirty_tracked_tree_is_refused_before_configure(gates, sample_tree, xdist):
    # under xdist the refusal was raised in each worker's collection: INTERNALERROR, exit 3
    src = sample_tree()
    (src / "src" / "c_api.cc").write_text((src / "src" / "c_api.cc").read_text() + "\n// local edit\n")
    start = time.monotonic()
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu", *xdist)
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "INTERNALERROR" not in out, out[-3000:]
    assert "uncommitted changes to tracked files (src/c_api.cc)" in out and "--allow-dirty" in out, out[-3000:]
    assert _nothing_configured(src)
    assert time.monotonic() - start < 60
    assert "RELEASE" not in out, "a refused run gives no release verdict"


NVCC_ASKED = pytest.mark.skipif(not HAS_NVCC, reason="nvcc (CUDA 13) is asked which archs it can build")


@pytest.mark.parametrize("arch,said", [
    pytest.param("8.0;8.6;8.9;9.0;9.9;10.0;12.0+PTX", ("cannot build compute_99/sm_99", "9.0 10.0"),
                 marks=NVCC_ASKED, id="an-arch-nvcc-cannot-build"),
    pytest.param("8.0;8.6;8.9;9.0;12.0+PTX", ("leaves out sm_100 (Blackwell datacenter",
                                               "--cmake-define=MXNET_CUDA_ARCH"), id="sm_100-left-out"),
])
def test_arch_list_is_refused_before_configure(gates, sample_tree, arch, said):
    src = sample_tree()
    result = gates("-m", "release", f"--mxnet-src={src}", "--cuda-from-wheels", f"--cuda-arch={arch}")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert all(s in out for s in said), out[-3000:]
    assert _nothing_configured(src)


def test_provenance_without_wheel_is_a_usage_error_naming_wheel(gates, sample_tree):
    src = sample_tree()
    result = gates("-m", "provenance", f"--mxnet-src={src}")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "--wheel=PATH" in out and "never builds" in out, out[-3000:]
    assert _nothing_configured(src)


def test_build_dir_of_another_tree_is_refused_and_fresh_reconfigures(gates, sample_tree, tmp_path):
    first, second = sample_tree("first"), sample_tree("second")
    build = tmp_path / "shared-build"
    select = ("-m", "release and build", "-k", "toggles", "--flavor=cpu", f"--build-dir={build}")
    ok = gates(*select, f"--mxnet-src={first}")
    assert ok.ret == 0, _out(ok)[-3000:]

    refused = gates(*select, f"--mxnet-src={second}")
    out = _out(refused)
    assert refused.ret == 1, out[-3000:]
    assert f"belongs to another build: it was configured from {first}" in out and "--fresh" in out, out[-3000:]

    fresh = gates(*select, f"--mxnet-src={second}", "--fresh")
    assert fresh.ret == 0, _out(fresh)[-3000:]
    assert f"--fresh: deleting {build}" in _out(fresh)


# --- one failure, said once ----------------------------------------------------------------------

def test_configure_error_is_shown_by_its_cause_once_and_stops_the_run(gates, sample_tree):
    def error_then_noise(path: Path):
        # The cause, then 80 lines of output: the last 40 lines of the log would miss it.
        cm = path / "CMakeLists.txt"
        noise = "".join(f'message(STATUS "later output {i}")\n' for i in range(80))
        cm.write_text(cm.read_text() + 'message(SEND_ERROR "selftest-cause: libfoo not found")\n' + noise)
    src = sample_tree(edit=error_then_noise)
    result = gates("-m", "release", f"--mxnet-src={src}", "--flavor=cpu")
    out = _out(result)
    assert result.ret == 1, out[-3000:]
    assert out.count("selftest-cause: libfoo not found") == 1, out[-5000:]
    assert "CMake Error" in out
    assert len(re.findall(r"^ERROR .*chain::configure - ", out, re.M)) == 1, "one failed step is one error, not one per gate"
    assert "build step failed (configure)" in out
    assert len(out.splitlines()) < 150, f"{len(out.splitlines())} lines for one failure"


# --- development overrides ----------------------------------------------------------------------

@pytest.mark.slow
def test_override_and_dirty_tree_build_but_cannot_reach_dist(gates, sample_tree):
    src = sample_tree()
    (src / "README.md").write_text("local edit\n")
    subprocess.run(["git", "-C", str(src), "add", "README.md"], check=True)
    result = gates("-m", "release and (build or provenance)", "-k", "not install", f"--mxnet-src={src}",
                   "--flavor=cpu", "--allow-dirty", "--cmake-define=USE_ONEDNN=OFF", "--jobs=2")
    out = _out(result)
    assert result.ret == 1, out[-5000:]
    assert "configure FAILED" not in out, "the cache is verified against the overridden profile"
    assert "FAILED   tests/test_build_overrides.py::test_no_development_override" in out, out[-5000:]
    assert "-DUSE_ONEDNN=OFF (the cpu profile sets ON): breaks the promise of oneDNN CPU kernels" in out
    assert "--allow-dirty" in out and "cannot publish" in out
    assert not list((src / "dist").glob("*.whl")), "a development build must not reach dist/"


def test_cmake_define_needs_key_equals_value():
    assert parse_cmake_defines(["USE_CUDNN=OFF", "-DCMAKE_CXX_FLAGS:STRING=-O2 -g"]) == {
        "USE_CUDNN": "OFF", "CMAKE_CXX_FLAGS": "-O2 -g"}
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_cmake_defines(["USE_CUDNN"])


# --- readers of CMake output ---------------------------------------------------------------------

def test_gencode_flags_in_each_of_nvccs_spellings():
    # the mxnet target's CUDA flags (CMake's File API: build_steps.configure.read_facts) carry the
    # fork's CUDA_ARCH_FLAGS space-separated; a CMake list and --generate-code are the same flags
    assert _gencode_flags("-gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_120,code=sm_120;"
                          "-gencode;arch=compute_120,code=compute_120") == [
        "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_120,code=sm_120",
        "-gencode=arch=compute_120,code=compute_120"]
    assert _gencode_flags(" -O3 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=sm_90 "
                          "--generate-code=arch=compute_100,code=[compute_100,sm_100]") == [
        "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_100,code=[compute_100,sm_100]"]


def test_log_excerpt_leads_with_the_first_error_not_the_tail(tmp_path):
    log = tmp_path / "configure.log"
    lines = [f"-- check {i}" for i in range(60)] + ["CMake Error at CMakeLists.txt:2 (project):",
                                                    "  No CMAKE_Fortran_COMPILER could be found."]
    lines += [f"-- later {i}" for i in range(90)]
    log.write_text("\n".join(lines) + "\n")
    text = log_excerpt(log)
    assert "configure.log, line 59" in text and "No CMAKE_Fortran_COMPILER" in text
    assert text.index("No CMAKE_Fortran_COMPILER") < text.index("--- last lines of the log ---")
    assert "-- later 89" in text


# --- interrupted builds --------------------------------------------------------------------------

#: the slow compile step's sleep, which the process checks look for
SLEEP = 317.25


def _left_running(marker: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if marker in line and "ps -eo" not in line]


def _ignore_sigint():
    # What a shell does to `pytest … &` in a script or a CI step: the job starts with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig,background", [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-to-a-background-job"])
def test_signal_stops_the_whole_build_and_says_where(sample_tree, tmp_path, sig, background):
    src = sample_tree(edit=slow_compile_edit(SLEEP))
    out_file = tmp_path / "run.log"
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir",
           str(HARNESS_ROOT), "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), "-m", "release",
           *host_opencv([f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", f"--basetemp={tmp_path / 'bt'}"])]
    with open(out_file, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path,
                                start_new_session=True, preexec_fn=_ignore_sigint if background else None)
        try:
            deadline = time.monotonic() + 240
            while not (_left_running(f"sleep {SLEEP}") and "[compile] [" in out_file.read_text()) \
                    and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.5)
            assert _left_running(f"sleep {SLEEP}"), out_file.read_text()[-3000:]
            proc.send_signal(sig)  # to pytest alone: the harness must stop the build's own group
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    out = out_file.read_text()
    try:
        assert rc == pytest.ExitCode.INTERRUPTED, out[-3000:]
        assert not _left_running(f"sleep {SLEEP}"), "the build went on after the run stopped"
        assert "[compile] interrupted at [" in out and "re-run the same command to resume" in out.lower(), out[-3000:]
        assert "compile INTERRUPTED" in out and "RELEASE no wheel: compile INTERRUPTED" in out, out[-3000:]
        log = (default_build(src, 'cpu') / "harness-logs" / "compile.log").read_text()
        assert log.startswith("==== compile run ") and "==== interrupted at [" in log, log[-2000:]
    finally:
        for line in _left_running(f"sleep {SLEEP}"):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def test_first_wheel_download_says_so_and_shows_pips_progress(tmp_path):
    """The first --cuda-from-wheels run downloads ~3 GB: it must say so, and show pip's lines as
    they come, not sit silent for minutes (a small real package stands in for the CUDA wheels)."""
    import io

    from build_steps.cuda_root import install_wheels
    progress = io.StringIO()
    target = install_wheels(tmp_path / "cache", requirements=("six",), progress=progress)
    said = progress.getvalue()
    assert "[cuda-root] first use: downloading the CUDA 13 wheels" in said, said
    assert "[cuda-root] Successfully installed six" in said, said
    assert (target / "six.py").is_file()
    again = io.StringIO()
    assert install_wheels(tmp_path / "cache", requirements=("six",), progress=again) == target
    assert again.getvalue() == "", "a cached install downloads nothing and says nothing"


def _slow_cxx_source(path: Path):
    # A C++ file g++ needs tens of seconds for, compiled into libmxnet: through sccache its
    # compiler runs as a child of the sccache server, not of ninja.
    funcs = "".join(f"std::map<std::string, std::vector<int>> slow_{i}(int x) {{ std::map<std::string, "
                    f"std::vector<int>> m; for (int j = 0; j < x; ++j) m[std::to_string(j * {i})].push_back(j); "
                    "return m; }\n" for i in range(6000))
    (path / "src" / "slow_unit.cc").write_text("#include <map>\n#include <string>\n#include <vector>\n" + funcs)
    cm = path / "CMakeLists.txt"
    cm.write_text(cm.read_text() + "target_sources(mxnet PRIVATE src/slow_unit.cc)\n")


def _compilers_in(build_dir: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "exe")).name == "cc1plus" and \
                    str(build_dir) in os.readlink(entry / "cwd"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(shutil.which("sccache") is None and not (Path(sys.executable).parent / "sccache").exists(),
                    reason="sccache is installed with the harness (pyproject)")
def test_interrupt_through_sccache_leaves_no_compiler_under_its_server(sample_tree, tmp_path):
    src = sample_tree(edit=_slow_cxx_source)
    build = default_build(src, 'cpu')
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir",
           str(HARNESS_ROOT), "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), "-m", "release",
           *host_opencv([f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", "--compiler-launcher=sccache",
                         f"--basetemp={tmp_path / 'bt'}"])]
    with open(tmp_path / "run.log", "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while not _compilers_in(build) and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.3)
            assert _compilers_in(build), (tmp_path / "run.log").read_text()[-3000:]
            time.sleep(1)
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    left = _compilers_in(build)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert rc == pytest.ExitCode.INTERRUPTED, (tmp_path / "run.log").read_text()[-3000:]
    assert not left, "a compiler run by the sccache server outlived the interrupted build"



# --- options (issue 42 item 7) ---------------------------------------------------------------------

def _raw(**kw) -> dict:
    return {"flavor": None, "cuda_arch": None, "cmake_defines": None, **kw}


def _zip_wheel(tmp_path: Path) -> Path:
    import zipfile
    wheel = tmp_path / "mxnet-2.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    return wheel


@pytest.mark.parametrize("jobs", [0, -1])
def test_jobs_zero_or_negative_is_a_usage_error(jobs):
    from build_steps.options import make_options
    with pytest.raises(UsageError, match=f"--jobs {jobs}: must be a positive number"):
        make_options(_raw(jobs=jobs))


@pytest.mark.parametrize("given,option", [
    ({"jobs": 4}, "--jobs"), ({"build_dir": "b"}, "--build-dir"), ({"cuda_from_wheels": True}, "--cuda-from-wheels"),
    ({"cuda_arch": "9.0"}, "--cuda-arch"), ({"fresh": True}, "--fresh"),
    ({"compiler_launcher": "ccache"}, "--compiler-launcher"), ({"allow_untracked": True}, "--allow-untracked"),
])
def test_build_options_with_wheel_are_refused_by_name(tmp_path, given, option):
    from build_steps.options import make_options
    wheel = _zip_wheel(tmp_path)
    with pytest.raises(UsageError) as caught:
        make_options(_raw(wheel=str(wheel), **given))
    said = str(caught.value)
    assert said.startswith(option) and "with --wheel nothing is built" in said and "\n" not in said, said
    make_options(_raw(wheel=str(wheel), compiler_launcher="auto"))  # the default is no choice


def test_a_killed_compiler_is_named_as_memory_with_jobs_to_lower(tmp_path):
    """Real g++ whose cc1plus is SIGKILLed (what the OOM killer does): its driver's words, then the hint."""
    from build_steps import compile as compile_step
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cc1plus").write_text("#!/bin/sh\nkill -KILL $$\n")
    (fake / "cc1plus").chmod(0o755)
    (tmp_path / "x.cc").write_text("int main() { return 0; }\n")
    proc = subprocess.run(["g++", f"-B{fake}/", "-c", str(tmp_path / "x.cc"), "-o", str(tmp_path / "x.o")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "Killed" in proc.stderr, proc.stderr
    log = tmp_path / "compile.log"
    log.write_text(f"[12/40] g++ -c x.cc\nFAILED: x.o\n{proc.stderr}ninja: build stopped: subcommand failed.\n")
    hint = compile_step.failure_hint(log_excerpt(log), jobs=8)
    assert "killed" in hint and "memory" in hint and "--jobs=4" in hint, hint
    assert compile_step.failure_hint("error: 'foo' was not declared in this scope", jobs=8) == ""
    nvcc_said = "nvcc error   : 'cicc' died due to signal 9 (Kill signal)"  # nvcc's words for the same
    assert "--jobs=2" in compile_step.failure_hint(nvcc_said, jobs=4)
    assert "--jobs" not in compile_step.failure_hint(nvcc_said, jobs=1), "one job cannot be lowered"


# --- the tree is the commit (issue 42 item 1) ------------------------------------------------------

def _untracked(src: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(src), "ls-files", "--others", "-z"], capture_output=True, text=True)
    return [p for p in out.stdout.split("\0") if p]


def test_an_untracked_source_is_refused_in_a_release_naming_it(gates, sample_tree):
    """The fork's CMake globs src/*.cc: an untracked one would be compiled into a wheel stamped with
    the clean commit. A release names it (and how to go on) before anything is configured."""
    src = sample_tree()
    (src / "src" / "stray_op.cc").write_text("int stray() { return 1; }\n")
    for k in range(6):
        (src / "include" / f"scratch{k}.h").write_text("\n")
    result = gates("-m", "release and build", "-k", "toggles", f"--mxnet-src={src}", "--flavor=cpu")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "has 7 untracked files that git does not ignore (src/stray_op.cc, include/scratch0.h" in out, out[-3000:]
    assert "+2 more" in out and "--allow-untracked" in out and "git -C" in out, out[-3000:]
    assert _nothing_configured(src)


def test_untracked_files_of_a_submodule_count_and_ignored_ones_do_not(tmp_path):
    from build_steps import preflight
    from selftest.fixtures_realtree import git
    sub = tmp_path / "dep"
    sub.mkdir()
    (sub / "a.cc").write_text("\n")
    git(sub, "init", "-q"), git(sub, "add", "-A"), git(sub, "commit", "-q", "-m", "dep")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / ".gitignore").write_text("*.log\n")
    git(tree, "init", "-q"), git(tree, "submodule", "-q", "add", str(sub), "3rdparty/dep")
    git(tree, "add", "-A"), git(tree, "commit", "-q", "-m", "tree")
    assert preflight.untracked_refusal(tree) == ""
    (tree / "notes.log").write_text("ignored\n")
    (tree / "dist").mkdir()
    (tree / "dist" / "mxnet-2.0.0-py3-none-any.whl").write_text("the harness's own output\n")
    assert preflight.untracked_refusal(tree) == ""
    (tree / "3rdparty" / "dep" / "stray.cu").write_text("\n")
    said = preflight.untracked_refusal(tree)
    assert "has 1 untracked file that git does not ignore (3rdparty/dep/stray.cu)" in said, said


def test_allow_untracked_is_a_development_setting(tmp_path):
    from build_steps.options import make_options
    from build_steps.overrides import development_option_promises
    options = make_options(_raw(flavor="cpu", allow_untracked=True))
    assert "--allow-untracked" in options.development_options
    said = development_option_promises(options)
    assert any(s.startswith("--allow-untracked (a development option): ") and "glob" in s for s in said), said


@pytest.mark.parametrize("where", ["the-tree", "in-the-tree"])
def test_a_build_dir_in_the_tree_is_refused_and_nothing_is_written_there(gates, sample_tree, where):
    src = sample_tree()
    build = src if where == "the-tree" else src / "src" / "mybuild"
    result = gates("-m", "release and build", "-k", "toggles", f"--mxnet-src={src}", "--flavor=cpu",
                   f"--build-dir={build}")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    said = "is the source tree" if where == "the-tree" else "is inside the source tree"
    assert f"the build dir {build} {said} {src}" in out and "--build-dir=DIR outside the tree" in out, out[-3000:]
    assert _untracked(src) == [], "nothing may be written into the tree"


def test_the_default_build_dir_is_beside_the_tree(tmp_path):
    from build_steps.options import make_options
    from build_steps.run_plan import BuildPaths
    src = tmp_path / "mxnet"
    assert BuildPaths(make_options(_raw(flavor="cpu")), src).build_dir == tmp_path / "mxnet-build-cpu"
    assert BuildPaths(make_options(_raw()), src).build_dir == tmp_path / "mxnet-build"


def test_a_relative_build_dir_is_the_current_directorys_and_an_empty_one_is_an_error(tmp_path, monkeypatch):
    from build_steps.options import make_options
    monkeypatch.chdir(tmp_path)
    assert make_options(_raw(build_dir="out/b")).build_dir == tmp_path / "out" / "b"
    with pytest.raises(UsageError, match="--build-dir is empty"):
        make_options(_raw(build_dir=""))


# --- paths (issue 42 item 6) -----------------------------------------------------------------------

@pytest.mark.skipif(not HAS_NVCC, reason="a real nvcc compiles the .cu")
def test_a_cu_compile_in_a_path_with_a_space_maps_the_path(tmp_path):
    """nvcc hands -Xcompiler's value to the host compiler through a command line it splits at spaces:
    the prefix map of a tree under "my builds/" made gcc see two input files. A real nvcc compile
    through the launcher's flags, in such a path, must work and map the path away."""
    from build_steps import deterministic_compile
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    src, build = tmp_path / "my trees" / "mxnet", tmp_path / "my builds" / "mxnet-build"
    (src / "src").mkdir(parents=True)
    build.mkdir(parents=True)
    (src / "src" / "k.cu").write_text('#include <cstdio>\n__global__ void k() {}\n'
                                      'void where() { std::puts(__FILE__); k<<<1, 1>>>(); }\n')
    argv = ["--lang=CUDA", f"--src={src}", f"--build={build}", nvcc, "-arch=sm_90", "-c",
            str(src / "src" / "k.cu"), "-o", str(build / "k.o")]
    proc = subprocess.run(deterministic_compile.command(argv, str(build)), cwd=build, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = (build / "k.o").read_bytes()
    assert b"/mxnet-src/src/k.cu" in data and str(src).encode() not in data


@pytest.mark.parametrize("place", ["build", "TMPDIR"])
def test_a_newline_in_a_path_is_refused_up_front_in_one_line(gates, sample_tree, tmp_path, monkeypatch, place):
    src = sample_tree()
    odd = tmp_path / "new\nline"
    odd.mkdir()
    args = [f"--build-dir={odd / 'b'}"] if place == "build" else []
    if place == "TMPDIR":
        monkeypatch.setenv("TMPDIR", str(odd))
    result = gates("-m", "release and build", "-k", "toggles", f"--mxnet-src={src}", "--flavor=cpu", *args)
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    line = next((l for l in out.splitlines() if "has a newline" in l), "")
    assert repr(str(odd)).strip("'") in line and "ninja" in line, out[-3000:]
    assert _nothing_configured(src) and not (odd / "b" / "CMakeCache.txt").exists()


@pytest.mark.skipif(not HAS_NVCC, reason="nvcc (CUDA 13) compiles the sample's kernel")
def test_the_sample_tree_builds_its_cuda_kernel_in_paths_with_spaces(gates, tmp_path):
    """The tree and its default build dir (beside it) both under "my trees/": configure, and every
    .cu compile through the reproducible-compile launcher, work. One arch (a development override):
    the path reaches nvcc once per compile whatever the arch list, and the six-arch fatbin is
    test_build_selftest's (a third of this test's time was nvcc's other five archs)."""
    from selftest.fixtures_build import copy_sample_tree
    src = copy_sample_tree(tmp_path / "my trees" / "src")
    result = gates("-m", "release and build", "-k", "compile_produced_an_elf_libmxnet", f"--mxnet-src={src}",
                   "--cuda-from-wheels", "--jobs=2", "--compiler-launcher=none",  # every object compiled here
                   "--cmake-define=MXNET_CUDA_ARCH=9.0")
    out = _out(result)
    assert result.ret == 0, out[-4000:]
    build = default_build(src)
    assert " " in str(build) and any(build.rglob("*.cu.o")), "the .cu must be compiled in the spaced build dir"
    assert re.search(r"gencode: -gencode=arch=compute_90,code=sm_90$", out, re.M), out[-3000:]


def test_a_cuda_build_refuses_a_tree_path_nvcc_cannot_carry():
    from build_steps import preflight
    odd = [("the build dir", Path('/srv/the "odd" build'), "pass --build-dir=DIR")]
    said = preflight.path_refusals(odd, cuda=True)
    assert len(said) == 1 and 'has "' in said[0] and "nvcc" in said[0] and "pass --build-dir=DIR" in said[0], said
    assert preflight.path_refusals(odd, cuda=False) == [], "a CPU build hands no path to nvcc"
    assert preflight.path_refusals([("the build dir", Path("/srv/my builds/b"), "pass --build-dir=DIR")],
                                   cuda=True) == [], "spaces work"
