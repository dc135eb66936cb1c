"""Selftest fixtures: publish area.

Real git repositories with a real bare remote (a local path, so pushes and ls-remote really
happen), and a recorded stand-in for the GitHub CLI. The stand-in exists only here, in the
selftests: it is put first on PATH, appends its argv (JSON, one line per call) to a log, answers
``auth status`` and prints a release URL; env vars make it fail on purpose.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from build_steps.release_report import KEY_ENV

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "selftest", "GIT_AUTHOR_EMAIL": "selftest@example.invalid",
                "GIT_COMMITTER_NAME": "selftest", "GIT_COMMITTER_EMAIL": "selftest@example.invalid"}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_IDENTITY})
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


@dataclass
class ReleaseRepo:
    repo: Path
    remote: Path

    @property
    def head(self) -> str:
        return git(self.repo, "rev-parse", "HEAD")

    def local_tags(self) -> list:
        return git(self.repo, "tag", "--list").split()

    def remote_tags(self) -> list:
        return git(self.remote, "tag", "--list").split()

    def tag(self, name: str, *, push: bool = False, local: bool = True) -> None:
        """Make tag ``name``; ``push`` puts it on the remote, ``local=False`` removes the local one."""
        git(self.repo, "tag", "-a", name, "-m", name)
        if push:
            git(self.repo, "push", "-q", "origin", f"refs/tags/{name}")
        if not local:
            git(self.repo, "tag", "-d", name)


def make_release_repo(root: Path, source: Path | None = None) -> ReleaseRepo:
    """A checkout with one commit (or a copy of ``source``'s history) and a bare ``origin``."""
    root.mkdir(parents=True, exist_ok=True)
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(remote)], check=True)
    repo = root / "mxnet"
    if source is not None:
        subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
        git(repo, "remote", "remove", "origin")
    else:
        repo.mkdir()
        git(repo, "init", "-q", "-b", "master")
        (repo / "CMakeLists.txt").write_text("project(mxnet)\n")
        (repo / ".gitignore").write_text("build/\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "init")
    # A repo-local identity: CI machines need not have a global one, and the tag is annotated.
    git(repo, "config", "user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"])
    git(repo, "config", "user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/master")
    return ReleaseRepo(repo=repo, remote=remote)


@pytest.fixture
def release_repo(tmp_path) -> ReleaseRepo:
    return make_release_repo(tmp_path / "release")


_GH = """#!{python}
# Recorded stand-in for the GitHub CLI (selftests only).
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as fh:
    fh.write(json.dumps(args) + "\\n")
if args[:2] == ["auth", "status"]:
    rc = int(os.environ.get("GH_STANDIN_AUTH_RC", "0"))
    print("Logged in to github.com (stand-in)" if rc == 0 else "You are not logged into any GitHub hosts",
          file=sys.stderr)
    sys.exit(rc)
if args[:2] == ["release", "create"]:
    rc = int(os.environ.get("GH_STANDIN_RELEASE_RC", "0"))
    if rc:
        print("HTTP 422: Validation Failed (stand-in)", file=sys.stderr)
        sys.exit(rc)
    print("https://github.com/example/mxnet/releases/tag/" + args[2])
"""


@dataclass
class GhStandin:
    bindir: Path
    log: Path

    def calls(self) -> list:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


@pytest.fixture
def report_key(tmp_path_factory, monkeypatch) -> Path:
    """The release report's key file (KEY_ENV). Beside the test's dir, not in it: the wheel's dir is
    one a run's sandboxes write, where the publish step refuses a key (issue 41 item 5)."""
    path = tmp_path_factory.mktemp("key") / "report.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    return path


@pytest.fixture
def gh_standin(tmp_path, monkeypatch) -> GhStandin:
    """``gh`` first on PATH (also for child pytests, which inherit the environment)."""
    bindir = tmp_path / "gh-bin"
    bindir.mkdir()
    log = tmp_path / "gh-calls.jsonl"
    exe = bindir / "gh"
    exe.write_text(_GH.format(python=sys.executable, log=str(log)))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GH_STANDIN_AUTH_RC", raising=False)
    monkeypatch.delenv("GH_STANDIN_RELEASE_RC", raising=False)
    return GhStandin(bindir=bindir, log=log)


@pytest.fixture
def no_gh(tmp_path, monkeypatch):
    """A PATH on which there is git but no gh (whatever the machine has installed)."""
    bindir = tmp_path / "git-only"
    bindir.mkdir()
    for tool in ("git",):
        real = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        (bindir / tool).symlink_to(real)
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


#: A release gate that skips / fails / passes, for "publish refused because a gate did not pass".
OTHER_GATES = '''
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_gate_that_passes():
    # Stands in for a gate that passed: the publish gate reads only the verdicts of the others.
    pass


def test_gate_that_{name}():
    {body}
'''


def other_gates_source(kind: str) -> str:
    body = {"skips": 'pytest.skip("OpenCV probe not available")',
            "fails": 'assert False, "libmxnet.so has no libopencv_* NEEDED"',
            "passes": "assert True"}[kind]
    return OTHER_GATES.format(name={"passes": "also_passes"}.get(kind, kind), body=body)


#: the version of the selftests' release wheels (tag v<it>)
RELEASE_VERSION = "2.0.0+cu13.bw.20260614.1"


def report_content(release_repo: ReleaseRepo, wheel: Path, **changes) -> dict:
    """The content of a whole-set cuda release report for ``wheel`` at ``release_repo``'s HEAD, as
    a verify run writes it; ``changes`` replace its fields (``release=`` is merged into the release
    section), for the forged and partial reports the publish selftests sign."""
    from build_steps.pinning import sha256_of
    from build_steps.release_manifest import load_manifest
    gates = list(load_manifest("cuda").gates)
    release = {"version": RELEASE_VERSION, "tag": f"v{RELEASE_VERSION}", "commit": release_repo.head}
    release.update(changes.pop("release", {}))
    content = {
        "flavor": "cuda", "repo": str(release_repo.repo), "remote": "origin", "release": release,
        "wheel": str(wheel), "sha256": sha256_of(wheel),
        "facts": {"features": ["CUDA", "CUDNN"], "sass": ["sm_90"], "ptx": ["compute_120"],
                  "commits": [release_repo.head], "stamp_source": "binary"},
        "gates_passed": gates, "verdicts": {g: "passed" for g in gates}, "excused": [], "assets": {},
    }
    content.update(changes)
    return content
