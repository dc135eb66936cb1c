"""What every attack plants: a payload script that leaves a marker when it runs, and a real git repo.

The marker is the evidence: an attack's selftest first runs the payload the way the unfixed code
did (plain git, the cached tool, the unchecked path) and sees the marker appear, so the attack is
live; then it runs the harness's own code path on a fresh plant and sees no marker.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "attacker", "GIT_AUTHOR_EMAIL": "attacker@example.invalid",
            "GIT_COMMITTER_NAME": "attacker", "GIT_COMMITTER_EMAIL": "attacker@example.invalid"}


@dataclass
class Plant:
    """A planted attack: ``root`` its directory, ``marker`` the file its payload writes."""
    root: Path
    marker: Path
    extra: dict = field(default_factory=dict)

    def fired(self) -> bool:
        return self.marker.exists()

    def evidence(self) -> str:
        return self.marker.read_text(errors="replace") if self.marker.exists() else ""


def payload(root: Path, marker: Path, name: str = "payload.sh") -> Path:
    """An executable script that records that it ran (and what secrets its environment held)."""
    root.mkdir(parents=True, exist_ok=True)
    script = root / name
    script.write_text("#!/bin/sh\n"
                      f"echo \"ran: $0 $* GH_TOKEN=${{GH_TOKEN:-}}\" >> '{marker}'\n"
                      # what a git hook or fsmonitor must answer to let git go on
                      "exit 0\n")
    script.chmod(0o755)
    return script


def git(repo: Path, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Plain git, as the unfixed harness ran it (the caller's environment, the repo's config)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **IDENTITY, **(env or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc


def repo(path: Path, files: dict | None = None) -> Path:
    """A real repository with one commit of ``files`` (a CMakeLists.txt by default)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "master")
    # an identity of the repo's own (data to git, as a release repo has one): the harness tags with
    # it where the operator has none, as root on a fresh CI machine (no ~/.gitconfig) and the
    # unprivileged uid of the user run; without it the tag attacks stopped at "Committer identity
    # unknown" before meeting the harness
    git(path, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    git(path, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    for rel, text in (files or {"CMakeLists.txt": "project(mxnet)\n"}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def bare_remote(repo_path: Path, remote: Path, name: str = "origin") -> Path:
    """A real bare remote (a local path, so ls-remote and push really happen)."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(remote)], check=True)
    git(repo_path, "remote", "add", name, str(remote))
    git(repo_path, "push", "-q", name, "HEAD:refs/heads/master")
    return remote


def unauthorized_server() -> str:
    """A real HTTP server on 127.0.0.1 that answers every request 401 (basic auth wanted), so git
    asks for credentials; its base URL. A daemon thread: it goes with the test process."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mxnet"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"
