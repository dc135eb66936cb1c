"""The report key was hidden only under HOME (issue 41 item 5, the red team's item 7): with
MXNET_RELEASE_REPORT_KEY_FILE (or XDG_CONFIG_HOME) outside it, every sandbox sees the key, and a
tree's code copied it, then forged a whole-set report. Here a sandboxed step copies the key into
its own output, if it exists where the harness put it."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from selftest.attacks._payload import Plant

STEAL = 'cat "$KEY" > "$MARKER" 2>/dev/null || rm -f "$MARKER"; true'


def plant(tmp: Path) -> Plant:
    tmp.mkdir(parents=True, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix="report-key-", dir="/var/tmp"))  # outside the homes and /tmp
    out = tmp / "out"
    out.mkdir()
    return Plant(tmp, out / "stolen", {"key": place / "report.key", "place": place})


def _steal(p: Plant) -> None:
    from build_steps import sandbox
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[])
        argv, env = sandbox.wrap(["sh", "-c", STEAL], {"PATH": "/usr/bin:/bin", "KEY": str(p.extra["key"]),
                                                       "MARKER": str(p.marker)}, writable=[p.marker.parent])
        subprocess.run(argv, env=env, capture_output=True, timeout=60, check=True)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
        shutil.rmtree(p.extra["place"], ignore_errors=True)


def without_fix(p: Plant) -> None:
    """The key made where the variable says, as before (0600; as root readable by others too, or
    nobody could read it: a user's run is the case)."""
    key = p.extra["key"]
    key.parent.chmod(0o755)  # a config dir as users have them
    key.write_text("k" * 64)
    key.chmod(0o644 if os.geteuid() == 0 else 0o600)
    _steal(p)


def with_harness(p: Plant) -> None:
    from unittest import mock

    from build_steps.release_report import KEY_ENV, ReportRefused, write_report
    with mock.patch.dict("os.environ", {KEY_ENV: str(p.extra["key"])}):
        with pytest.raises(ReportRefused, match="a sandboxed step could read it"):
            write_report(p.root / "report.json", {"flavor": "cuda"})
    assert not p.extra["key"].exists()
    _steal(p)
