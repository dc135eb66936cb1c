"""Issue 41 item 1: the sandbox holds when the harness runs as root, and as a user.

bwrap started by root without a user namespace or a capability drop kept CAP_SYS_ADMIN: code
inside ran ``umount -l /root`` and ``umount -l /tmp`` (the real secrets and every run dir came
back), ``mount -o remount,rw /`` (the host became writable) and read /etc/shadow. Each selftest
here runs the real sandbox (build_steps.sandbox.wrap, real bwrap) with a script that tries all of
that and reports what it got; as root directly, and as an unprivileged user through ``setpriv``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from build_steps import sandbox
from selftest.conftest import HARNESS_ROOT
from selftest.unprivileged_run import USER_UID  # the unprivileged uid of the "as a user" runs

#: What the code inside tries. Each line prints NAME=0 when the attempt worked.
ATTACK = r"""
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=0"; else echo "$name=1"; fi; }
try umount_root umount -l /root
try umount_tmp umount -l /tmp
try remount_rw mount -o remount,rw /
try shadow cat /etc/shadow
try root_only cat "$ROOT_ONLY"
try other_run cat "$OTHER_RUN"
try host_tmp cat "$HOST_TMP"
try home_secret cat "$HOME_SECRET"
try userns_umount unshare -Urm umount -l /root
try write_out sh -c 'echo made > "$OUT/made"'
try write_tmp sh -c 'echo t > /tmp/inside'
try write_home sh -c 'echo h > "$HOME/h"'
try read_input cat "$INPUT/data"
try write_input sh -c 'echo x > "$INPUT/x"'
echo uid=$(id -u)
echo caps=$(awk '/^CapEff/{e=$2} /^CapBnd/{b=$2} END{print e "/" b}' /proc/self/status)
"""


def _probe(work: Path) -> dict:
    """Run ATTACK in the sandbox the harness makes (this process's uid) and return what worked.

    ``work`` is a directory this process owns; the "other run" is a dir outside /tmp (as a
    --basetemp run dir would be) made private to this process, the "home secret" a file in
    this process's HOME."""
    inp, out = work / "in", work / "out"
    inp.mkdir()
    (inp / "data").write_text("input")
    root_only = inp / "root-only"          # in a dir the step may read, but mode 0600
    root_only.write_text("secret")
    root_only.chmod(0o600)
    other = Path(tempfile.mkdtemp(prefix="sbx-other-run-", dir="/var/tmp"))  # mode 0700
    (other / "verdicts.json").write_text("{}")
    host_tmp = Path(tempfile.mkdtemp(prefix="sbx-host-tmp-")) / "f"
    host_tmp.write_text("host")
    home = Path(os.environ.get("HOME") or "/")
    home_secret = home / f".sbx-selftest-{uuid.uuid4().hex[:8]}" if os.access(home, os.W_OK) else None
    if home_secret:
        home_secret.write_text("secret")
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[])
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "OUT": str(out), "INPUT": str(inp),
               "ROOT_ONLY": str(root_only), "OTHER_RUN": str(other / "verdicts.json"),
               "HOST_TMP": str(host_tmp), "HOME_SECRET": str(home_secret or "/nonexistent")}
        argv, env = sandbox.wrap(["sh", "-c", ATTACK], env, readable=[inp], writable=[out])
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
        shutil.rmtree(other)
        shutil.rmtree(host_tmp.parent)
        if home_secret:
            home_secret.unlink()
    got = dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)
    got["returncode"] = str(proc.returncode)
    got["made"] = str((out / "made").is_file())
    got["stderr"] = proc.stderr[-2000:]
    return got


HELD = ("umount_root", "umount_tmp", "remount_rw", "shadow", "root_only", "other_run", "host_tmp",
        "home_secret", "userns_umount", "write_input")
WORKS = ("write_out", "write_tmp", "write_home", "read_input")


def _assert_held(got: dict, who: str, held=HELD) -> None:
    assert got["returncode"] == "0", got
    broke = [k for k in held if got.get(k) != "1"]
    assert not broke, f"{who}: from inside the sandbox these worked: {broke} ({got})"
    refused = [k for k in WORKS if got.get(k) != "0"]
    assert not refused, f"{who}: the step could not do its own work: {refused} ({got})"
    assert got["made"] == "True"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (CI runners and containers run as root)")
def test_as_root_the_sandbox_cannot_mount_read_root_files_or_another_runs(tmp_path):
    got = _probe(tmp_path)
    _assert_held(got, "as root")
    assert got["uid"] != "0"  # the code runs as an unprivileged uid, not as root in a namespace
    assert got["caps"] == "0000000000000000/0000000000000000", got  # none, and none to regain


_AS_USER = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from selftest.test_sandbox_root import _probe
print("RESULT " + json.dumps(_probe(Path(sys.argv[2]))))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become an unprivileged user (setpriv)")
def test_as_a_user_the_sandbox_holds_the_same(tmp_path):
    # The uid runs a copy of this checkout with a venv it can read (selftest/unprivileged_run.py):
    # on CI the checkout, its venv and its Python may be under /root (0700), which this process's
    # own interpreter and HARNESS_ROOT were (measured: "No module named 'selftest'").
    from selftest.unprivileged_run import Unavailable, as_user, make_user_checkout
    try:
        made = make_user_checkout()
    except Unavailable as e:
        pytest.fail(f"as root the sandbox must also be tried as an unprivileged user, and that cannot be "
                    f"set up: {e}")
    work = Path(tempfile.mkdtemp(prefix="sbx-user-", dir="/var/tmp"))
    try:
        os.chown(work, USER_UID, USER_UID)
        proc = subprocess.run(
            as_user([str(made.python), "-c", _AS_USER, str(made.repo), str(work)]),
            capture_output=True, text=True, timeout=300, cwd=work,
            env={"PATH": os.environ["PATH"], "HOME": str(work), "TMPDIR": str(work)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = json.loads(proc.stdout.split("RESULT ", 1)[1])
    finally:
        shutil.rmtree(work)
        made.remove()
    # As a user the code runs with that user's uid (no other uid can be had without privileges):
    # the user's own files stay readable where the sandbox shows them, so the root-only file and
    # a run dir outside /tmp are the root case's; /tmp (where run dirs are made) stays private.
    _assert_held(got, "as a user", [k for k in HELD if k not in ("root_only", "other_run")])
    assert got["uid"] == str(USER_UID)
    assert got["caps"] == "0000000000000000/0000000000000000", got


@pytest.mark.skipif(os.geteuid() != 0, reason="hands dirs over only as root")
def test_handing_the_outputs_over_follows_no_link_and_never_the_checkout(tmp_path):
    """The step's outputs become the sandbox uid's; a link the last step planted there (to a file
    of root's outside, symbolic or hard) is not followed, a masked .git stays root's, and a dir in
    or above the harness's checkout is refused."""
    outside = tmp_path / "outside"
    outside.write_text("root's")
    out = tmp_path / "out"
    (out / "sub" / ".git").mkdir(parents=True)
    (out / "sub" / "made").write_text("x")
    (out / "link").symlink_to(outside)
    os.link(outside, out / "hard")
    sandbox.hand_over([out], skip=[out / "sub" / ".git"])
    uid, _gid = sandbox.sandbox_ids()
    assert out.stat().st_uid == uid and (out / "sub" / "made").stat().st_uid == uid
    assert outside.stat().st_uid == 0 and (out / "link").lstat().st_uid == uid  # the link itself only
    assert (out / "sub" / ".git").stat().st_uid == 0
    assert (out / "sub").stat().st_uid == 0  # the worktree's top: git checks its owner
    for refused in (HARNESS_ROOT, HARNESS_ROOT / "build_steps", HARNESS_ROOT.parent):
        with pytest.raises(sandbox.UsageError, match="the harness's checkout"):
            sandbox.hand_over([refused])
    assert (HARNESS_ROOT / "build_steps").stat().st_uid == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the hand-over to the sandbox's uid happens as root only")
def test_as_root_the_invokers_own_caches_are_never_handed_to_the_sandbox(tmp_path, monkeypatch):
    """Found merging issue 41's sandbox: as root, the install and configure sandboxes were given the
    invoker's ~/.cache/pip, ~/.cache/uv and ~/.cache/ccache writable, and the hand-over made them
    nobody's (root's own pip then disabled its cache: "not owned ... by the current user"), and
    any later tree's sandboxed step could write what root's own pip reads next. As root the
    sandbox's installers and compiler caches are dirs of the harness cache, the sandbox uid's."""
    from build_steps.venv import pip_command, Venv
    home = tmp_path / "home"
    for d in ("pip", "uv", "ccache"):
        (home / ".cache" / d).mkdir(parents=True)
    (home / ".ccache").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    monkeypatch.setenv("MXNET_HARNESS_CACHE", str(tmp_path / "harness-cache"))
    installers = sandbox.installer_caches()
    _readable, compilers = sandbox.cache_dirs()
    theirs = [p for p in [*installers, *compilers] if Path(p).resolve().is_relative_to(home)]
    assert not theirs, f"the invoker's own caches are bound writable: {theirs}"
    assert installers and all(Path(p).is_relative_to(tmp_path / "harness-cache") for p in installers)
    argv, _env = sandbox.wrap(["true"], {}, writable=[*installers, *compilers])
    subprocess.run(argv, check=True, timeout=60)
    owners = {d: (home / ".cache" / d).stat().st_uid for d in ("pip", "uv", "ccache")}
    assert set(owners.values()) == {0}, owners
    # pip is told where its cache is: the sandbox uid's dir, not its empty HOME's
    venv = Venv(root=tmp_path / "v", python=tmp_path / "v/bin/python", site_packages=tmp_path / "v/site",
                python_version="3.11", pass_env=())
    cmd = pip_command(venv)
    assert "--cache-dir" in cmd and Path(cmd[cmd.index("--cache-dir") + 1]) in installers


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox runs steps as another uid as root only")
def test_as_root_a_sandboxed_step_reads_the_trees_commit_with_git(tmp_path):
    """Found merging issue 41: as root the configure step runs as nobody, and git inside it refused
    the root-owned tree ("dubious ownership"), so the fork's CMake stamped MXNET_COMMIT_HASH=
    Unavailable and test_commit_stamp failed the README's main job. git inside the sandbox trusts
    the tree it is shown (the sandbox, not git's ownership check, is the boundary there)."""
    repo = tmp_path / "tree"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git[:-2], "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    out = tmp_path / "build"
    argv, env = sandbox.wrap(["git", "-C", str(repo), "rev-parse", "HEAD"],
                             {"PATH": os.environ["PATH"]}, readable=[repo], writable=[out])
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == head, proc.stderr
