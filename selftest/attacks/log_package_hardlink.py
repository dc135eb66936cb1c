"""The build made ``harness-logs/package.log`` a hard link to a file of the harness's (same
filesystem, same owner): ``open(log, "w")`` truncated and overwrote that file, and O_NOFOLLOW
alone would not see it (issue 41, 4)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from selftest.attacks._payload import Plant


def plant(tmp: Path) -> Plant:
    victim = tmp / "harness" / "report.json"
    victim.parent.mkdir(parents=True)
    victim.write_text('{"verdict": "the harness wrote this"}\n')
    logs = tmp / "build" / "harness-logs"
    logs.mkdir(parents=True)
    os.link(victim, logs / "package.log")
    return Plant(tmp, tmp / "fired", {"log": logs / "package.log", "victim": victim})


def _changed(p: Plant) -> None:
    if p.extra["victim"].read_text() != '{"verdict": "the harness wrote this"}\n':
        p.marker.write_text("the harness's file was overwritten through the hard link\n")


def without_fix(p: Plant) -> None:
    with open(p.extra["log"], "w") as fh:
        fh.write("$ python -m build --wheel\n")
    _changed(p)


def with_harness(p: Plant) -> None:
    # package.build_wheel opens its log with exactly this call (a whole wheel build is not needed
    # to show the open refusing)
    from build_steps.own_files import PlantedLink, open_log
    with pytest.raises(PlantedLink, match="package.log: it is a hard link"):
        open_log(p.extra["log"], "w")
    _changed(p)
