"""Issue 40, item 3: CI meets the real fork, on a CPU machine, with no 45-minute compile.

``../shared/fixtures/mxnet-fork-3f13890-cpu-O0/libmxnet.so.xz`` is a real libmxnet.so of the fork (cpu
flavor, host -O0, OpenCV and LAPACK ON, oneDNN OFF; its README). The build steps after compile are
functions of paths, so these selftests run them on the real fork tree (selftest/fixtures_realtree.py)
and that library: stage (package.stage_tree, bundle.stage_package: the fork's symlinks, defect 4),
bundle (grafted, defect 5), package (python -m build on the fork's own setup.py), then the harness's
venv install and runtime gates in one child run (Features, the PNG round trips, imresize, the gluon
transforms, ONNX, the installed version), and the fork's own
tests/python/unittest/test_d2l_opencv_image_io_regression.py in that venv. One wheel and one venv
for the session: CI has 2 cores.

``MXNET_FORK_LIBMXNET`` names another such library (a libmxnet.so or its .xz) for people outside
this repo, with ``MXNET_FORK_TREE`` for its tree; without either they skip, counted on one NOTE line.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps import bundle, package
from build_steps.library_policy import plain_commonly_loaded
from build_steps.profile_data import PROFILES
from build_steps.readers.elf import read_dynamic
from selftest.fixtures_realtree import LIBMXNET_ENV, NO_LIBRARY, fork_library_source
from selftest.fixtures_runtime import MXNET_191_EXTRAS

#: the fork's own OpenCV regression test (issue 40: 4 passed, none skipped, on the GPU host's wheel)
FORK_OPENCV_TEST = "tests/python/unittest/test_d2l_opencv_image_io_regression.py"
#: the cpu profile's gates this library fails by design: it was built with USE_ONEDNN=OFF (its README)
BY_DESIGN = {"test_feature_matches_profile[USE_ONEDNN]"}
VERSION = "2.0.0+cpu.linux.20261203"


@pytest.fixture(scope="session")
def fork_staged(fork_tree, fork_libmxnet, tmp_path_factory) -> dict:
    """Stage and bundle as build_steps/build_chain.py does: a copy of python/ in <build>/harness-package."""
    build = tmp_path_factory.mktemp("fork-build")
    staged_tree = package.stage_tree(fork_tree, build / "harness-package")
    staged = bundle.stage_package(fork_libmxnet, staged_tree, PROFILES["cpu"], tree=fork_tree)
    return {"build": build, "tree": staged_tree, "staged": staged}


@pytest.fixture(scope="session")
def fork_wheel(fork_staged, fork_tree) -> Path:
    build = fork_staged["build"]
    result = package.build_wheel(fork_staged["tree"], VERSION, PROFILES["cpu"], build / "staging",
                                 build / "harness-logs", sys.executable, commit_of=fork_tree)
    return result.wheel


@pytest.mark.slow
def test_the_forks_tree_stages_with_its_closure_grafted(fork_staged, fork_tree):
    staged = fork_staged["staged"]
    pkg = fork_staged["tree"] / "python" / "mxnet"
    space = pkg / "space.py"
    assert not space.is_symlink() and space.read_bytes() == (fork_tree / "contrib" / "tvmop" / "space.py").read_bytes()
    assert {"mxnet", "nnvm", "dmlc", "mshadow", "dlpack"} <= set(staged.headers)
    originals = {b.original for b in staged.bundle}
    assert {"libopencv_core.so.406", "libopencv_imgcodecs.so.406", "libgfortran.so.5"} <= originals
    needed = read_dynamic(staged.libmxnet).needed
    # libmxnet's own NEEDED of bundled libraries name the grafts (libgfortran too, not only OpenCV)
    assert not originals & set(needed), sorted(originals & set(needed))
    assert [n for n in needed if n.startswith("libopencv_imgcodecs-")], needed
    assert not [b.soname for b in staged.bundle if plain_commonly_loaded(b.soname)]


def _failed(out: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^FAILED\s+tests/\S+::(\S+)", out, re.M)}


@pytest.fixture(scope="session")
def fork_gates(fork_wheel, fork_tree, mxnet191_wheelhouse, tmp_path_factory) -> dict:
    """One child run of the runtime gates on the fork's wheel, its venv kept for the fork's own test."""
    # the fork's cpu libmxnet fixture was linked against Debian's OpenCV 4.6 and bundled from the host
    return run_fork_gates(fork_wheel, fork_tree, mxnet191_wheelhouse, tmp_path_factory.mktemp("fork-gates"),
                          opencv="system")


def run_fork_gates(fork_wheel: Path, fork_tree: Path, mxnet191_wheelhouse: Path, base: Path, *, opencv: str) -> dict:
    """The runtime gates on ``fork_wheel`` in a child run, the venv kept under ``base`` (also for
    selftest/test_opencv_build.py's wheel with the built OpenCV). ``opencv``: which OpenCV the wheel
    bundles ("system" or "built", the run's --opencv), stated by the caller: the profile's default
    is the release's, not necessarily the wheel's."""
    # a child pytest as the `gates` fixture runs one, but session-scoped (pytester is per test)
    from selftest.conftest import HARNESS_ROOT
    venv = base / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
           "-p", "no:cacheprovider", "-m", "(runtime or opencv or onnx) and not acceptance",
           str(HARNESS_ROOT / "tests"),
           f"--wheel={fork_wheel}", "--flavor=cpu", f"--opencv={opencv}", f"--mxnet-src={fork_tree}",
           f"--package-version={VERSION}",
           f"--find-links={mxnet191_wheelhouse}", "--no-index", "--no-deps",
           *[f"--extra-requirement={r}" for r in (*MXNET_191_EXTRAS, "onnxruntime", "requests", "packaging",
                                                  "graphviz<0.9")],
           f"--venv-dir={venv}", "--keep-venv", f"--basetemp={base / 'bt'}"]
    proc = subprocess.run(cmd, cwd=base, env=env, capture_output=True, text=True, timeout=1800)
    return {"out": proc.stdout + proc.stderr, "rc": proc.returncode, "venv": venv}


@pytest.mark.slow
def test_the_forks_wheel_passes_the_runtime_gates(fork_gates):
    assert_runtime_gates_passed(fork_gates["out"])


def assert_runtime_gates_passed(out: str) -> None:
    failed = _failed(out)
    assert failed == BY_DESIGN, out[-8000:]
    for gate in ("test_png_rgb_roundtrip", "test_png_grayscale_roundtrip"):
        assert re.search(rf"^PASSED\s+tests/test_opencv_roundtrip.py::{gate}", out, re.M), out[-8000:]
    for gate in ("imresize", "gluon_vision_transforms", "onnxruntime_matches_mxnet",
                 "feature_matches_profile\\[USE_OPENCV\\]", "version_matches_wheel"):
        assert re.search(rf"^PASSED\s+tests/\S+::\S*{gate}", out, re.M), (gate, out[-8000:])
    assert "was loaded from" not in out, out[-8000:]
    assert not re.search(r"^SKIPPED", out, re.M), out[-8000:]


@pytest.mark.slow
def test_the_forks_own_opencv_regression_test_passes_in_the_venv(fork_gates, fork_tree, tmp_path):
    assert (fork_gates["venv"] / "bin" / "python").exists(), fork_gates["out"][-4000:]
    run_fork_opencv_test(fork_gates["venv"], fork_tree, tmp_path)


def run_fork_opencv_test(venv: Path, fork_tree: Path, tmp_path: Path) -> None:
    """The fork's own test_d2l_opencv_image_io_regression.py in ``venv``: 4 passed, none skipped."""
    python = venv / "bin" / "python"
    assert python.exists(), venv
    # pytest is not one of the wheel's dependencies: this interpreter's pytest, appended after the
    # venv's own packages (so numpy and mxnet stay the venv's)
    extra = tmp_path / "pytest-only"
    extra.mkdir()
    from importlib.metadata import distribution
    for name in ("pytest", "pluggy", "iniconfig", "pygments"):
        dist = distribution(name)
        site = Path(dist.locate_file(""))
        for top in sorted({f.parts[0] for f in dist.files or () if len(f.parts) and f.parts[0] not in ("..", "bin")
                           and not f.parts[0].endswith(".dist-info") and not f.parts[0].startswith("__")}):
            if not (extra / top).exists():
                (extra / top).symlink_to(site / top)
    script = ("import sys; sys.path.append(sys.argv[1]); import pytest; "
              "raise SystemExit(pytest.main(['-p', 'no:cacheprovider', '-q', '-rs', sys.argv[2]]))")
    copy = tmp_path / Path(FORK_OPENCV_TEST).name  # outside the tree: its conftests are the fork's CI's
    shutil.copy2(fork_tree / FORK_OPENCV_TEST, copy)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "LD_LIBRARY_PATH")}
    proc = subprocess.run([str(python), "-c", script, str(extra), str(copy)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert re.search(r"\b4 passed\b", out) and "skipped" not in out, out[-4000:]


def test_a_missing_fork_library_is_one_line_in_the_summary(pytester, monkeypatch):
    """selftest/conftest.py's summary line, on a run whose real-fork-wheel selftests skip as
    fork_libmxnet does when neither the fixture nor $MXNET_FORK_LIBMXNET exists."""
    from selftest.conftest import HARNESS_ROOT
    pytester.makeconftest("from selftest.conftest import pytest_terminal_summary  # noqa: F401\n")
    pytester.makepyfile(test_fork=f"""
        import pytest

        @pytest.mark.parametrize("n", range(2))
        def test_needs_the_library(n):
            pytest.skip("{NO_LIBRARY}: neither .../libmxnet.so.xz nor ${LIBMXNET_ENV} exists")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HARNESS_ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                       cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120)
    notes = [ln for ln in r.stdout.splitlines() if ln.startswith("NOTE:")]
    assert len(notes) == 1 and "2 selftests of the real fork's wheel skipped" in notes[0], r.stdout
    assert f"{LIBMXNET_ENV}=" in notes[0]


def test_the_library_variable_must_name_a_file(monkeypatch, tmp_path):
    monkeypatch.setenv(LIBMXNET_ENV, str(tmp_path / "nowhere.so"))
    with pytest.raises(pytest.UsageError, match=f"{LIBMXNET_ENV}=.*no such file"):
        fork_library_source()
    (tmp_path / "libmxnet.so").write_bytes(b"\x7fELF")
    monkeypatch.setenv(LIBMXNET_ENV, str(tmp_path / "libmxnet.so"))
    assert fork_library_source() == tmp_path / "libmxnet.so"


@pytest.mark.slow
def test_the_forks_wheel_loads_its_own_libraries_beside_the_hosts_openssl(fork_gates):
    """Defect 5 on the real wheel: the host's libcrypto.so.3 and libz.so.1 loaded first (as ``import
    ssl`` and ``import zlib`` do), then ``import mxnet``: the probes' origin check finds every bundled
    library it maps loaded from the wheel."""
    from selftest.conftest import HARNESS_ROOT
    from selftest.test_grafted_wheel import PRELOADED_IMPORT
    python = fork_gates["venv"] / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    proc = subprocess.run([str(python), "-c", PRELOADED_IMPORT, str(HARNESS_ROOT / "tests" / "probes")],
                          capture_output=True, text=True, env=env, cwd="/", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"], report["problems"]
    pkg = report["package_dir"]
    assert any(p.startswith(pkg + "/lib/libcrypto-") for p in report["crypto_mapped"]), report["crypto_mapped"]
    assert any(not p.startswith(pkg) for p in report["crypto_mapped"]), report["crypto_mapped"]
    assert len(report["bundled_loaded"]) > 100, report["bundled_loaded"]
