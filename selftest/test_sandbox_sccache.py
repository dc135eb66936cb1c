"""The compile lines the tree's CMake chose run confined through sccache too (issue 29, item 1).

With sccache as the compiler launcher, ninja's compile commands are only clients: the compilers
run in the sccache *server*. Before, the harness started that server outside every sandbox, so a
flag the tree adds to its compile lines ran the tree's code with the harness's user, its HOME and
its environment. Here the sample tree's CMake adds ``-B<tree>/toolbin/``: gcc then runs the
tree's fake ``as`` for each object it assembles (sccache hashes the flag and hands the compile to
its server; ``-wrapper`` would not do: sccache cannot cache it and its client compiles locally,
inside the compile's sandbox). The fake ``as`` tries, for real, to read the credential files of
the HOME the harness was started with, a ``GH_TOKEN`` from its own environment and from every
ancestor's (``/proc/<pid>/environ``: the server's), to reach a port the test listens on at
127.0.0.1 (the server and its clients talk through a socket file, so neither sandbox has the
network), to write into the harness's checkout, and leaves a detached process that drops the run's supervision mark (``env -i setsid``), then
assembles as the real ``as`` would.

Shown failing without the change: run against the code before it (commit 6f8c629, the server
started by ``sccache --start-server`` outside the sandbox), this test's first assertion fails:
the fake ``as`` wrote ``read <home>/.netrc: sentinel-...``, ``env of <server pid>:
GH_TOKEN=sentinel-...``, ``reached 127.0.0.1:<port>`` and ``wrote checkout``.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from build_steps import compile, launcher, processes, sandbox, supervise
from selftest.conftest import HARNESS_CACHE, HARNESS_ROOT, host_opencv
from selftest.fixtures_build import copy_sample_tree

pytestmark = [
    pytest.mark.skipif(sandbox.probe() is not None, reason=f"no sandbox here: {sandbox.probe()}"),
    pytest.mark.skipif(launcher.find_tool("sccache") is None, reason="sccache (scripts/setup.sh installs it)"),
]

SUMMARY = re.compile(r"compiler launcher: sccache: (\d+) requests, (\d+) hits, (\d+) misses")
CRED_FILES = (".netrc", ".config/gh/hosts.yml", ".ssh/id_rsa")

_FAKE_AS = r"""#!/bin/sh
# selftest attacker: gcc runs this for each object (-B), inside the sccache server
out="$PWD/attack-as.txt"
echo "as ran" >> "$out"
for f in {cred_paths} "$HOME/.netrc" "$HOME/.ssh/id_rsa"; do
  [ -r "$f" ] && echo "read $f: $(cat "$f")" >> "$out"
done
[ -n "${{GH_TOKEN:-}}" ] && echo "env GH_TOKEN=$GH_TOKEN" >> "$out"
p=$PPID
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep '^GH_TOKEN=' | sed "s/^/env of $p: /" >> "$out"
  p=$(awk '/^PPid:/{{print $2}}' /proc/$p/status 2>/dev/null)
done
python3 -c "import socket; socket.create_connection(('127.0.0.1', {port}), 2)" 2>/dev/null \
  && echo "reached 127.0.0.1:{port}" >> "$out"
echo "FORGED-{mark}" > {checkout}/attack-as-{mark} 2>/dev/null && echo "wrote checkout" >> "$out"
env -i setsid sleep {sleep} </dev/null >/dev/null 2>&1 &
exec as "$@"
"""

_CMAKE = r"""
# selftest attacker: every compile line runs the tree's own assembler
target_compile_options(mxnet PRIVATE -B${CMAKE_CURRENT_SOURCE_DIR}/toolbin/)
"""


def _sleeps(sleep: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"sleep {sleep}" in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def world(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    mark = uuid.uuid4().hex[:10]
    home = Path(f"/var/tmp/sbx-sccache-home-{mark}")  # outside /tmp: only the sandbox hides it
    sleep = f"{4000 + int(mark[:4], 16) % 1000}.{int(mark[4:8], 16) % 97 + 1}"
    for rel in CRED_FILES:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"sentinel-{mark}-file-{Path(rel).name}\n")

    def edit(src: Path):
        fake = src / "toolbin" / "as"
        fake.parent.mkdir()
        fake.write_text(_FAKE_AS.format(cred_paths=" ".join(str(home / r) for r in CRED_FILES),
                                        checkout=HARNESS_ROOT, mark=mark, sleep=sleep,
                                        port=listener.getsockname()[1]))
        fake.chmod(0o755)
        cm = src / "CMakeLists.txt"
        cm.write_text(cm.read_text() + _CMAKE)

    src = copy_sample_tree(tmp_path / "src", edit)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "SCCACHE_SERVER_PORT", "SCCACHE_CONF") and not k.startswith("PYTEST_XDIST")}
    env.update(HOME=str(home), GH_TOKEN=f"sentinel-{mark}-env-GH_TOKEN", SCCACHE_DIR=str(tmp_path / "sccache"),
               XDG_CONFIG_HOME=str(home / ".config"))
    env.setdefault("MXNET_HARNESS_CACHE", str(HARNESS_CACHE))
    yield {"mark": mark, "src": src, "build": tmp_path / "build", "run_dir": tmp_path / "run", "env": env,
           "sleep": sleep}
    for pid in _sleeps(sleep):
        os.kill(pid, signal.SIGKILL)
    for leftover in HARNESS_ROOT.glob(f"attack-as-{mark}"):
        leftover.unlink()
    shutil.rmtree(home, ignore_errors=True)
    listener.close()


def _chain(w) -> subprocess.CompletedProcess:
    """The build chain's compile gate on the tree, a development run (a release run refuses to start
    with the GH_TOKEN this test plants in the harness's environment). The compile only: the attack
    and the cache are the sccache server's, which serves the compile and nothing after it."""
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
           "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests" / "test_build_chain.py"),
           "-k", "test_compile_produced_an_elf_libmxnet",
           f"--mxnet-src={w['src']}", "--flavor=cpu",
           *host_opencv(["--jobs=2", f"--build-dir={w['build']}", f"--basetemp={w['run_dir']}",
                         "--compiler-launcher=sccache"])]
    return subprocess.run(cmd, capture_output=True, text=True, env=w["env"], cwd=str(w["src"].parent), timeout=900)


@pytest.mark.slow
def test_a_compile_flag_of_the_tree_runs_its_code_confined_in_the_sccache_server_which_still_caches(world):
    first = _chain(world)
    out = first.stdout + first.stderr
    assert first.returncode == 0, out[-4000:]
    seen = (world["build"] / "attack-as.txt").read_text()
    # the attack ran, once per object of the mxnet target the server compiled ...
    m = SUMMARY.search(out)
    assert m and int(m.group(3)) > 0, out[-3000:]
    assert 0 < seen.count("as ran") <= int(m.group(3)), (seen, m.group(0))
    # ... and read nothing, wrote nothing of the harness's and left nothing running
    assert f"sentinel-{world['mark']}" not in seen and "wrote" not in seen and "reached" not in seen, seen
    assert not list(HARNESS_ROOT.glob(f"attack-as-{world['mark']}"))
    assert _sleeps(world["sleep"]) == []
    assert "runs outside the sandbox" not in out
    # the confined server still caches: the same tree from a deleted build dir is all hits
    shutil.rmtree(world["build"])
    second = _chain(world)
    out2 = second.stdout + second.stderr
    assert second.returncode == 0, out2[-4000:]
    m2 = SUMMARY.search(out2)
    assert m2 and int(m2.group(2)) == int(m.group(3)) and int(m2.group(3)) == 0, (m.group(0), m2 and m2.group(0))
    assert not (world["build"] / "attack-as.txt").exists(), "a hit must not run the compiler"


@pytest.fixture
def own_server_env(tmp_path, monkeypatch):
    """A supervised run's setting for the build's own server: no port or config of the user's."""
    for key in ("SCCACHE_SERVER_PORT", "SCCACHE_CONF"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "cache"))
    # as short as a run's own (/tmp/mxnet-harness-run-*): a socket file's path has a limit
    run_tmp = Path(tempfile.mkdtemp(prefix="sbx-sccache-"))
    monkeypatch.setenv(supervise.RUN_TMP, str(run_tmp))
    monkeypatch.setenv(supervise.RUN_MARK, "selftest-run-mark")
    monkeypatch.setenv("GH_TOKEN", "sentinel-server-env")
    build = tmp_path / "build"
    build.mkdir()
    yield build
    shutil.rmtree(run_tmp, ignore_errors=True)


def _nspid(pid: int) -> list[str]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return line.split()[1:]
    return []


def test_the_builds_own_server_is_in_a_sandbox_of_its_own_reached_by_a_socket_file(own_server_env):
    tool = launcher.choose("sccache")
    server = launcher.private_server(tool, {}, confine=compile._server_box(own_server_env, {}))
    port = server.env["SCCACHE_SERVER_PORT"]
    try:
        assert server.proc is not None and server.unconfined == "" and server.network is False, server
        assert Path(server.env["SCCACHE_SERVER_UDS"]).is_socket()
        assert server.pid and len(_nspid(server.pid)) == 2, "the server is not in a pid namespace of its own"
        environ = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
        # an allow-list environment (the harness's GH_TOKEN not in it), the run's mark kept
        assert not any(e.startswith(b"GH_TOKEN=") for e in environ), environ
        assert f"{supervise.RUN_MARK}=selftest-run-mark".encode() in environ, "the run's supervision cannot find it"
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", int(port))) != 0, "the server listens on the network"
        assert "error" not in launcher.snapshot(tool, server.env), "the harness cannot read its counters"
    finally:
        server.stop()
    assert server.proc.poll() is not None
    # by the server's own mark: a port number can be another run's too (issue 42 item 8; a
    # concurrent selftest's process once matched the port here)
    assert processes.with_env(launcher.SERVER_MARK, server.env[launcher.SERVER_MARK]) == [], \
        "the server's sandbox outlived its stop"


def test_a_server_reading_the_users_sccache_config_or_port_stays_outside_and_says_why(own_server_env, tmp_path,
                                                                                      monkeypatch):
    tool = launcher.choose("sccache")
    conf = tmp_path / "sccache.conf"
    conf.write_text("")  # a dist client or remote storage would be configured here
    monkeypatch.setenv("SCCACHE_CONF", str(conf))
    server = launcher.private_server(tool, {}, confine=compile._server_box(own_server_env, {}))
    try:
        if os.geteuid() == 0:
            # as root the build runs as nobody, which a server of root's cannot serve (it wrote
            # objects and depfiles 0640 root's): the build's own confined server, and a note why
            assert server.proc is not None and server.unconfined == "", server
            assert f"the sccache config file {conf} is not used: as root" in server.note, server.note
        else:
            assert server.proc is None and server.network is True, server
            assert f"reads the sccache config file {conf}" in server.unconfined, server.unconfined
    finally:
        server.stop()
    monkeypatch.delenv("SCCACHE_CONF")
    monkeypatch.setenv("SCCACHE_SERVER_PORT", str(_free_port()))
    server = launcher.private_server(tool, {}, confine=compile._server_box(own_server_env, {}))
    try:
        if os.geteuid() == 0:
            assert server.private and server.proc is not None and server.unconfined == "", server
            assert "is not used: as root" in server.note, server.note
            assert server.env["SCCACHE_SERVER_PORT"] != os.environ["SCCACHE_SERVER_PORT"], server
        else:
            assert not server.private and "names your own server" in server.unconfined, server
    finally:
        if server.private:
            server.stop()
        else:
            launcher.stop_server(tool)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("end", ["stop_build", "watchdog"])
def test_two_runs_that_drew_one_port_never_stop_each_others_server(own_server_env, tmp_path, monkeypatch, end):
    """Issue 42, item 8: a build's private server took its port number from a bind released at
    once, so a later run can draw the same number (forced here: both draws give one port). The
    end of run A must stop A's server and leave run B's server, and B's compiles through it,
    alone: its compile's end (compile.stop_build: at the end, or after SIGINT/SIGTERM) and its
    watchdog's sweep after the harness died (SIGKILL: supervise.stop_members by run id)."""
    tool = launcher.choose("sccache")
    port = _free_port()
    monkeypatch.setattr(launcher, "_free_port", lambda: port)
    servers = {}
    for run in ("a", "b"):
        # each run has its own temporary dir (its socket file) and its own run mark
        run_tmp = Path(tempfile.mkdtemp(prefix=f"sbx-sccache-{run}-"))
        monkeypatch.setenv(supervise.RUN_TMP, str(run_tmp))
        monkeypatch.setenv(supervise.RUN_MARK, f"selftest-run-{run}")
        servers[run] = launcher.private_server(tool, {}, confine=compile._server_box(own_server_env, {}))
    a, b = servers["a"], servers["b"]
    try:
        assert a.env["SCCACHE_SERVER_PORT"] == b.env["SCCACHE_SERVER_PORT"] == str(port)
        assert a.pid and b.pid and a.pid != b.pid, (a, b)
        assert b.pid not in a.processes(), "run A counts run B's server among its own processes"
        if end == "stop_build":
            compile.stop_build(None, own_server_env, server=a)
        else:
            assert a.pid in supervise.stop_members("selftest-run-a"), "the watchdog did not find run A's server"
            a.proc.wait(timeout=30)
        assert a.proc.poll() is not None, "run A's server outlived its end"
        assert b.proc.poll() is None and Path(f"/proc/{b.pid}").exists(), "run A's end stopped run B's server"
        # B still compiles (in the build dir: the server's sandbox sees it)
        src = own_server_env / "x.c"
        src.write_text("int x(void) { return 42; }\n")
        out = subprocess.run([tool.path, "gcc", "-c", str(src), "-o", str(own_server_env / "x.o")],
                             capture_output=True, text=True, env={**os.environ, **b.env}, cwd=str(own_server_env),
                             timeout=120)
        assert out.returncode == 0 and (own_server_env / "x.o").is_file(), out.stderr[-2000:]
    finally:
        for server in (a, b):
            server.stop()
