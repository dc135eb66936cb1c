"""Selftest fixtures: the real MXNet fork tree.

The harness was written against its own sample tree; these fixtures give the selftests the real
fork (``../shared/fixtures/mxnet-fork-*.tar.xz`` beside the repo, see the README there), unpacked
once per run. ``MXNET_FORK_TREE`` names another fork tree instead: an unpacked directory or a
``.tar.xz`` of one. The snapshot has no git metadata, so the fixtures make it: ``fork_tree`` is a
git repo with one commit and the submodules as plain vendored directories (how a source archive
arrives); ``fork_copy()`` makes a cheap private copy (hard links) with the submodules either
vendored or as their own small repos (pinned by the superproject's commit), for tests that change
the tree.
"""
from __future__ import annotations

import lzma
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from build_steps import source
from build_steps.once import run_once
from build_steps.profile_data import PROFILES

FIXTURES_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"
FORK_TREE_ENV = "MXNET_FORK_TREE"
#: A real libmxnet.so of the fork, cpu flavor (../shared/fixtures/mxnet-fork-*-cpu-*/, its README), for the
#: steps after compile (selftest/test_realfork_wheel.py): this variable names another (a .so or its .xz).
LIBMXNET_ENV = "MXNET_FORK_LIBMXNET"
#: what the skip says (conftest's NOTE line counts these)
NO_LIBRARY = "no real fork library"
_GIT_ID = ["-c", "user.email=selftest@example.invalid", "-c", "user.name=selftest",
           "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"]


def git(path: Path, *args, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(path), *_GIT_ID, *args], capture_output=True, text=True,
                          check=check)


def _named_or_fixture(var: str, pattern: str, what: str, *, file: bool) -> Path | None:
    """The path ``$var`` names (refused in one line when it is not there), else the newest fixture
    matching ``pattern`` beside this checkout, else None."""
    env = os.environ.get(var)
    if env:
        path = Path(env).expanduser()
        if not (path.is_file() if file else path.exists()):
            raise pytest.UsageError(f"{var}={env}: no such {'file' if file else 'file or directory'}; name {what}")
        return path.resolve()
    found = sorted(FIXTURES_DIR.glob(pattern))
    return found[-1] if found else None


def fork_source() -> Path | None:
    """The fork tree this run uses: $MXNET_FORK_TREE, else the newest fixture archive, else None."""
    return _named_or_fixture(FORK_TREE_ENV, "mxnet-fork-*.tar.xz",
                             "an unpacked MXNet fork tree or a .tar.xz of one", file=False)


def unpack_fork(src: Path, dest: Path) -> Path:
    """The tree root under ``dest``: an archive is unpacked, a directory copied (symlinks kept)."""
    if src.is_dir():
        shutil.copytree(src, dest / "mxnet", symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "build", "build-*"))
        root = dest / "mxnet"
    else:
        with tarfile.open(src) as tar:
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(dest, filter="tar")
            else:
                tar.extractall(dest)
        roots = [p for p in dest.iterdir() if p.is_dir()]
        if len(roots) != 1:
            raise pytest.UsageError(f"{src}: expected one top directory, found {[p.name for p in roots]}")
        root = roots[0]
    if not source.is_mxnet_tree(root):
        raise pytest.UsageError(f"{src}: not an MXNet source tree (no CMakeLists.txt + python/setup.py)")
    return root


def commit_tree(root: Path, submodules: str = "vendored", message: str = "fork tree") -> Path:
    """git-init ``root`` with one commit.

    ``submodules="repos"``: every non-empty submodule directory becomes its own repo with one
    commit first, so the superproject records it as a gitlink (pinned at that commit), as in a
    checkout after ``git submodule update``. ``"vendored"``: they are plain directories.
    """
    if submodules == "repos":
        for rel in source.submodule_paths(root):
            sub = root / rel
            if sub.is_dir() and any(sub.iterdir()) and not (sub / ".git").exists():
                git(sub, "init", "-q")
                git(sub, "add", "-A")
                git(sub, "commit", "-q", "-m", f"{rel} snapshot")
    elif submodules != "vendored":
        raise ValueError(f"submodules={submodules!r}: 'vendored' or 'repos'")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return root


def _once_for_the_run(shared_dir: Path, key: str, make) -> Path:
    """``make(dest)``'s path, made in ``<shared_dir>/<key>`` by one xdist worker for all of them
    (build_steps.once.run_once: the others wait on its lock and take the path, or its failure).
    The trees below are read-only to every test, and the run's shared dir outlives every worker."""
    def produce() -> dict:
        dest = shared_dir / key
        if dest.exists():  # a worker that was killed while making it (its record was never written)
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        return {"path": str(make(dest))}
    return Path(run_once(shared_dir, key, produce)["path"])


@pytest.fixture(scope="session")
def fork_pristine(shared_dir) -> Path:
    """The real fork tree, unpacked once per run (no git metadata): copy it, never change it."""
    src = fork_source()
    if src is None:
        pytest.skip(f"no real fork tree: neither {FIXTURES_DIR}/mxnet-fork-*.tar.xz nor "
                    f"${FORK_TREE_ENV} exists (set {FORK_TREE_ENV} to an unpacked fork or its .tar.xz)")
    return _once_for_the_run(shared_dir, "fork-pristine", lambda dest: unpack_fork(src, dest))


def link_copy(src: Path, dest: Path) -> Path:
    """A copy of ``src`` whose files are hard links: seconds for the 130 MB tree.

    Safe with git inside: git replaces its files (index, refs, objects) by rename, never in place.
    """
    shutil.copytree(src, dest, symlinks=True, copy_function=os.link)
    return dest


@pytest.fixture(scope="session")
def fork_tree(fork_pristine, shared_dir) -> Path:
    """The real fork tree as a git repo with one commit, submodules vendored; shared by the run."""
    return _once_for_the_run(shared_dir, "fork-tree",
                             lambda dest: commit_tree(link_copy(fork_pristine, dest / "mxnet")))


@pytest.fixture(scope="session")
def fork_tree_repos(fork_pristine, shared_dir) -> Path:
    """The same with every submodule its own repo, pinned by the superproject at its HEAD."""
    return _once_for_the_run(shared_dir, "fork-repos",
                             lambda dest: commit_tree(link_copy(fork_pristine, dest / "mxnet"), "repos"))


@pytest.fixture
def fork_copy(fork_tree, fork_tree_repos, tmp_path):
    """``fork_copy(submodules="vendored"|"repos", edit=None, commit=True)`` -> a private copy.

    ``edit(root)`` may delete or add files (never write into existing ones: they are hard links);
    ``commit=True`` commits the edit (a tree that was shipped that way), False leaves it in the
    work tree (an emptied submodule dir under a kept gitlink is an uninitialised submodule).
    """
    def make(submodules: str = "vendored", edit=None, commit: bool = True) -> Path:
        base = {"vendored": fork_tree, "repos": fork_tree_repos}[submodules]
        dest = link_copy(base, tmp_path / f"mxnet-{submodules}")
        if edit is not None:
            edit(dest)
            if commit:
                git(dest, "add", "-A")
                git(dest, "commit", "-q", "-m", "edited")
        return dest
    return make


def fork_library_source() -> Path | None:
    """$MXNET_FORK_LIBMXNET, else the fixture's libmxnet.so.xz beside this checkout, else None."""
    return _named_or_fixture(LIBMXNET_ENV, "mxnet-fork-*-cpu-*/libmxnet.so.xz",
                             "a libmxnet.so of the fork (cpu flavor) or its .xz", file=True)


@pytest.fixture(scope="session")
def fork_libmxnet(shared_dir) -> Path:
    """The fixture's libmxnet.so, unpacked once per run (341 MB from 28 MB of xz)."""
    src = fork_library_source()
    if src is None:
        pytest.skip(f"{NO_LIBRARY}: neither {FIXTURES_DIR}/mxnet-fork-*-cpu-*/libmxnet.so.xz nor "
                    f"${LIBMXNET_ENV} exists (set {LIBMXNET_ENV} to a libmxnet.so of the fork or its .xz)")
    if src.suffix != ".xz":
        return src

    def unxz(dest: Path) -> Path:
        with lzma.open(src) as fin, open(dest / "libmxnet.so", "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        return dest / "libmxnet.so"
    return _once_for_the_run(shared_dir, "fork-libmxnet", unxz)


#: the fork's headers that include OpenCV (grep of the fork at 3f13890): a source reaching any of them
#: reaches opencv2/opencv.hpp, which includes every module's header that opencv_modules.hpp declares
_OPENCV_HEADERS = ("opencv2/", "image_utils.h", "resize-inl.h", "image_random-inl.h", "image_augmenter.h",
                   "opencv_compatibility.h")


def assert_fork_compiles_against(fork_tree: Path, prefix: Path, config_dir: Path, tmp_path: Path) -> None:
    """The fork configured (cpu profile) with OPENCV_ROOT=``config_dir``, and every source that reaches
    an OpenCV header through the compiler's dependency pass, each header from ``prefix`` (also for
    selftest/test_opencv_build.py's built OpenCV)."""
    import json
    import shlex

    from build_steps import configure as configure_step
    from build_steps.arch import make_arch

    cpu = PROFILES["cpu"]
    res = configure_step.configure(fork_tree, tmp_path / "build", cpu, make_arch(cpu, None, {}),
                                   tmp_path / "logs", extra_defs={"OPENCV_ROOT": str(config_dir),
                                                                  "CMAKE_EXPORT_COMPILE_COMMANDS": "ON"})
    assert res.cache.get("OpenCV_DIR") == str(config_dir)
    entries = json.loads((res.build_dir / "compile_commands.json").read_text())
    reaching = []
    for e in entries:
        path = Path(e["file"])
        if not path.is_relative_to(fork_tree / "src") and not path.is_relative_to(fork_tree / "plugin"):
            continue
        text = path.read_text(errors="replace")
        if any(f'include <{h}' in text or f'include "{h}' in text or f'/{h}"' in text for h in _OPENCV_HEADERS):
            reaching.append(e)
    names = {Path(e["file"]).relative_to(fork_tree).as_posix() for e in reaching}
    assert {"src/initialize.cc", "src/io/image_io.cc", "src/ndarray/ndarray.cc"} <= names, sorted(names)
    failures, from_host = [], []
    for e in reaching:
        argv = shlex.split(e["command"])
        # the compile's own flags; -M lists every header instead of compiling (-o is the dep file)
        cut = [a for i, a in enumerate(argv) if a not in ("-c",) and argv[i - 1] != "-o" and a != "-o"]
        deps = tmp_path / "deps" / (Path(e["file"]).name + ".d")
        deps.parent.mkdir(exist_ok=True)
        proc = subprocess.run([*cut, "-fdiagnostics-color=never", "-M", "-MF", str(deps)], cwd=e["directory"], capture_output=True, text=True)
        if proc.returncode != 0:
            failures.append(f"{Path(e['file']).relative_to(fork_tree)}: " + "/".join(l for l in proc.stderr.splitlines() if 'error' in l)[:300])
            continue
        headers = deps.read_text().replace("\\\n", " ").split()
        from_host += [h for h in headers if "/opencv2/" in h and not Path(h).resolve().is_relative_to(prefix.resolve())]
    assert not failures, f"{len(failures)} of {len(reaching)} fork sources do not compile against the prefix: " + \
        "; ".join(failures[:5])
    assert not from_host, f"OpenCV headers taken from the host, not the prefix: {sorted(set(from_host))[:5]}"
