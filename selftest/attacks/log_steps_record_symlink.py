"""``setup.py`` (the tree's code, in the package sandbox, with the staging dir writable) made the
staging dir's ``.harness-steps.log`` a symbolic link to a file of the harness's: the harness's
step record appended to it (issue 41, 4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.attacks._payload import Plant


def plant(tmp: Path) -> Plant:
    victim = tmp / "harness-venv" / "bin" / "activate"
    victim.parent.mkdir(parents=True)
    victim.write_text("# the harness's own file\n")
    marker = tmp / "fired"
    staging = tmp / "build" / "dist-staging"
    staging.mkdir(parents=True)
    from build_steps.step_record import STEP_LOG
    (staging / STEP_LOG).symlink_to(victim)
    return Plant(tmp, marker, {"staging": staging, "victim": victim})


def _changed(p: Plant) -> None:
    if p.extra["victim"].read_text() != "# the harness's own file\n":
        p.marker.write_text("the harness's file was written through the link\n")


def without_fix(p: Plant) -> None:
    from build_steps.step_record import STEP_LOG
    with open(p.extra["staging"] / STEP_LOG, "a") as fh:
        fh.write("package 1.0\n")
    _changed(p)


def with_harness(p: Plant) -> None:
    from build_steps.own_files import PlantedLink
    from build_steps.step_record import record_step
    with pytest.raises(PlantedLink, match=r"\.harness-steps\.log: it is a symbolic link"):
        record_step(p.extra["staging"], "package", "1.0")
    _changed(p)
