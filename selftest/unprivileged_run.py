"""Run selftests of this checkout as an unprivileged uid, from a root run (issue 41: "as root and as
a user").

CI runs the selftests as root on a fresh machine, so without this the "as a user" half of a
selftest is never run there. A uid of its own can read nothing of root's: the checkout and its
``.venv`` may lie under ``/root`` (mode 0700), and so may the Python behind the venv (a pyenv
build; measured on this project's hosts: ``/root/.pyenv/versions/3.11.7``). So the uid gets its own
readable copy of what it needs, in a dir it owns outside the homes and ``/tmp`` (as a checkout is):

- the checkout's files (``git ls-files``: tracked and new, not the ignored build outputs);
- a venv made by a Python the uid can run itself, of this Python's major.minor, with this venv's
  site-packages (same ABI, so compiled wheels load; no index, no network): read in place where
  the uid can, else hard-linked (the 11,000 links of a full selftest venv took 1 to 2 s to make
  and up to 5 s to remove on the loaded 2-core machine; a copy of its 356 MB, 4 s and 3 s);
- an empty HOME (no git identity either, as root's on a fresh CI machine), and a pytest basetemp
  under ``/tmp``, where the root run's tmp dirs are too (the sandbox hides ``/tmp`` and the homes;
  a run dir outside them would test another layout).

Everything it cannot set up raises ``Unavailable`` with the reason: the caller fails on it (a
check that quietly does not run as a user proves nothing).
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from selftest.conftest import HARNESS_ROOT

#: the unprivileged uid and gid (no passwd entry needed; test_sandbox_root.py uses the same)
USER_UID = 4242
#: where a user's Python usually is; root's PATH (pyenv shims under /root) is not the user's
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class Unavailable(Exception):
    """The unprivileged run could not be set up on this machine: the message says why."""


def as_user(argv: list[str]) -> list[str]:
    """``argv`` started as USER_UID with no groups. Through ``sh -c exec``: setpriv's own exec
    still resolves the program with root's access (measured: it starts a binary under /root that
    the uid cannot read), so the program is looked up by the uid itself."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise Unavailable("setpriv (util-linux) is not installed: root cannot start anything as an "
                          "unprivileged uid (apt-get install util-linux)")
    return [setpriv, f"--reuid={USER_UID}", f"--regid={USER_UID}", "--clear-groups", "--",
            "/bin/sh", "-c", 'exec "$@"', "sh", *argv]


def user_env(home: Path) -> dict:
    """The uid's whole environment: none of root's variables (a CI job's tokens) go along."""
    return {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8"}


def choose_python(candidates: list[str], home: Path) -> str:
    """The first of ``candidates`` that the uid can run and that is this Python's major.minor (so
    this venv's compiled packages load in it)."""
    want = "%d.%d" % sys.version_info[:2]
    tried = []
    for python in dict.fromkeys(c for c in candidates if c):
        proc = subprocess.run(as_user([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]),
                              capture_output=True, text=True, env=user_env(home), cwd="/", timeout=60)
        got = proc.stdout.strip()
        if proc.returncode == 0 and got == want:
            return python
        tried.append(f"{python}: " + (f"Python {got}" if proc.returncode == 0
                                      else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]))
    raise Unavailable(f"no Python {want} that uid {USER_UID} can run (tried {'; '.join(tried) or 'none'}): "
                      f"install python{want} system-wide (Debian: apt-get install python{want})")


def python_candidates() -> list[str]:
    """This venv's base interpreter first (the same build), then the system's of the same version."""
    want = "python%d.%d" % sys.version_info[:2]
    return [os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
            shutil.which(want, path=SYSTEM_PATH) or "", shutil.which("python3", path=SYSTEM_PATH) or ""]


def checkout_files() -> list[str]:
    """The checkout's files as git lists them: tracked, and new ones not ignored (what this run
    tests), never the ignored build dirs, venvs and caches."""
    from build_steps import gitops  # git with nothing of a checkout's config run (hooks, fsmonitor)
    proc = gitops.run(HARNESS_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=120)
    if proc.returncode != 0:
        raise Unavailable(f"cannot list the checkout's files with git ls-files in {HARNESS_ROOT}: "
                          f"{proc.stderr.strip()}")
    # a tracked file deleted in the working tree is not this run's; a tracked link is copied as one
    return [f for f in proc.stdout.split("\0")
            if f and ((HARNESS_ROOT / f).is_file() or (HARNESS_ROOT / f).is_symlink())]


def _chown_tree(top: Path, files: bool = True) -> None:
    """``top`` and the dirs and links below it the uid's (links themselves, never followed), and
    with ``files`` the files too."""
    os.lchown(top, USER_UID, USER_UID)
    for root, dirs, names in os.walk(top):
        for name in (*dirs, *names):
            path = os.path.join(root, name)
            if files or not os.path.isfile(path) or os.path.islink(path):
                os.lchown(path, USER_UID, USER_UID)


def _link_or_copy(src: str, dst: str) -> None:
    """A file of root's venv for the uid: a hard link where the file is anyone's to read (it
    stays root's, so the uid cannot change it), else a copy made the uid's."""
    st = os.lstat(src)
    if stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IROTH and not st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        try:
            os.link(src, dst, follow_symlinks=False)
            return
        except OSError:
            pass  # another filesystem: copied below
    shutil.copy2(src, dst, follow_symlinks=False)
    os.lchown(dst, USER_UID, USER_UID)


def _uid_can_read(path: Path, home: Path) -> bool:
    proc = subprocess.run(as_user(["/bin/sh", "-c", 'test -r "$1" && test -x "$1"', "sh", str(path)]),
                          capture_output=True, env=user_env(home), cwd="/", timeout=60)
    return proc.returncode == 0


def _give_packages(venv: Path, home: Path) -> None:
    """This venv's packages in the uid's ``venv``: read in place where the uid can read them (a
    ``.pth`` naming them), else hard-linked into its site-packages. In place, this venv's own
    ``.pth`` files are not run (Python runs those of site dirs only), so its editable install,
    which points at this checkout, is not used; linked, it is left out: the copy's files are."""
    sites = list(dict.fromkeys(Path(sysconfig.get_path(k)) for k in ("purelib", "platlib")))
    theirs = venv / Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)
    if all(_uid_can_read(site, home) for site in sites):
        (theirs / "selftest-root-venv.pth").write_text("".join(f"{site}\n" for site in sites))
        os.lchown(theirs / "selftest-root-venv.pth", USER_UID, USER_UID)
        return
    for site in sites:
        shutil.copytree(site, venv / site.relative_to(sys.prefix), symlinks=True,
                        dirs_exist_ok=True, copy_function=_link_or_copy,
                        ignore=shutil.ignore_patterns("__editable__*", "mxnet_cu13_release_harness-*"))
    _chown_tree(venv, files=False)  # the files were made the uid's or linked


@dataclass
class UserCheckout:
    """A copy of this checkout and venv that USER_UID can read and run."""
    work: Path      # under /var/tmp: the copy, its venv and HOME
    tmp: Path       # under /tmp: the pytest basetemp's parent
    repo: Path
    python: Path    # the copy's venv's python
    home: Path

    def pytest(self, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, Path]:
        """``python -m pytest *args`` in the copy, as the uid; the completed process and the
        JUnit XML it wrote."""
        junit = self.work / "junit.xml"
        proc = subprocess.run(
            as_user([str(self.python), "-m", "pytest", *args, "-p", "no:cacheprovider",
                     f"--basetemp={self.tmp / 'basetemp'}", f"--junitxml={junit}"]),
            capture_output=True, text=True, env=user_env(self.home), cwd=self.repo, timeout=timeout)
        return proc, junit

    def remove(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def make_user_checkout() -> UserCheckout:
    """Copy the checkout and this venv's packages for USER_UID (see the module's docstring)."""
    if os.geteuid() != 0:
        raise Unavailable("only root can start a run as another uid")
    # mode 0700 (mkdtemp) until it is the uid's; /var/tmp: outside /tmp and the homes, as a checkout
    work = Path(tempfile.mkdtemp(prefix="selftest-as-user-", dir="/var/tmp"))
    tmp = Path(tempfile.mkdtemp(prefix="selftest-as-user-", dir="/tmp"))
    made = UserCheckout(work=work, tmp=tmp, repo=work / "repo", python=work / "venv" / "bin" / "python",
                        home=work / "home")
    try:
        made.home.mkdir()
        for rel in checkout_files():
            (made.repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HARNESS_ROOT / rel, made.repo / rel, follow_symlinks=False)
        _chown_tree(work)
        _chown_tree(tmp)
        python = choose_python(python_candidates(), made.home)
        proc = subprocess.run(as_user([python, "-m", "venv", "--without-pip", str(work / "venv")]),
                              capture_output=True, text=True, env=user_env(made.home), cwd=work, timeout=120)
        if proc.returncode != 0:
            raise Unavailable(f"{python} -m venv as uid {USER_UID} failed: {proc.stderr.strip()}")
        _give_packages(work / "venv", made.home)
    except BaseException:
        made.remove()
        raise
    return made


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """Each test case's outcome in a JUnit XML: ``{name: (passed|skipped|failed, message)}``."""
    got = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("skipped", "failure", "error"):
                outcome = "skipped" if child.tag == "skipped" else "failed"
                message = child.get("message") or ""
        got[case.get("name")] = (outcome, message)
    return got
