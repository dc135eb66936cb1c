"""During the compile (in its sandbox, which cannot see /root) the build replaces
``harness-logs/compile.log`` with a symbolic link to the operator's ``~/.config/gh/hosts.yml``
and fails: the harness, outside the sandbox, printed "the log's" tail in its error message, so
the token went to the terminal and the CI log (issue 41, 3/4)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant

SECRET = "oauth_token: ghp_read_through_a_planted_link"


def plant(tmp: Path) -> Plant:
    secret = tmp / "root" / ".config" / "gh" / "hosts.yml"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"github.com:\n    {SECRET}\n")
    logs = tmp / "build" / "harness-logs"
    logs.mkdir(parents=True)
    (logs / "compile.log").symlink_to(secret)
    return Plant(tmp, tmp / "fired", {"log": logs / "compile.log"})


def _shown(p: Plant, text: str) -> None:
    if SECRET in text:
        p.marker.write_text(f"the harness showed: {text}\n")


def without_fix(p: Plant) -> None:
    with open(p.extra["log"], "rb") as fh:  # what log_tail did
        _shown(p, fh.read().decode())


def with_harness(p: Plant) -> None:
    from build_steps.errors import log_excerpt, log_tail
    tail = log_tail(p.extra["log"])
    assert "symbolic link" in tail, tail
    _shown(p, tail)
    _shown(p, log_excerpt(p.extra["log"]))
