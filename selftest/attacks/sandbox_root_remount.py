"""As root, the sandbox kept every capability (issue 41 item 1, the red team's item 6): code of the
tree ran ``umount -l /tmp`` (the host's /tmp and every run dir came back) and
``mount -o remount,rw /`` (the host became writable), then wrote there. Here the payload does the
same and, if it gets through, copies a secret of the host's /tmp into a file on the host."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from selftest.attacks._payload import Plant

ATTACK = ('umount -l /tmp 2>/dev/null; mount -o remount,rw / 2>/dev/null; '
          'cat "$SECRET" > "$MARKER" 2>/dev/null || rm -f "$MARKER" 2>/dev/null; true')


def plant(tmp: Path) -> Plant:
    tmp.mkdir(parents=True, exist_ok=True)
    secret = tmp / "host-secret"
    secret.write_text("root's secret")
    secret.chmod(0o600)
    return Plant(tmp, tmp / "fired", {"secret": secret})


def _env(p: Plant) -> dict:
    return {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "SECRET": str(p.extra["secret"]), "MARKER": str(p.marker)}


def without_fix(p: Plant) -> None:
    """The sandbox as the unfixed code made it as root: bwrap with its capabilities, no uid drop."""
    if os.geteuid() != 0:
        pytest.skip("the attack needs a harness that runs as root")
    subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                    "--unshare-pid", "--die-with-parent", "--", "sh", "-c", ATTACK],
                   env=_env(p), capture_output=True, timeout=60)


def with_harness(p: Plant) -> None:
    from build_steps import sandbox
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[])
        argv, env = sandbox.wrap(["sh", "-c", ATTACK], _env(p))
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
    assert proc.returncode == 0, proc.stderr
