"""The build replaced its whole ``harness-logs`` directory with a symbolic link to a directory of the
harness's (its ``.venv``'s site-packages): every log the harness writes there would land there
(issue 41, 4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.attacks._payload import Plant


def plant(tmp: Path) -> Plant:
    venv_site = tmp / "harness-venv" / "site-packages"
    venv_site.mkdir(parents=True)
    (tmp / "build").mkdir()
    (tmp / "build" / "harness-logs").symlink_to(venv_site)
    return Plant(tmp, venv_site / "compile.log", {"log": tmp / "build" / "harness-logs" / "compile.log"})


def without_fix(p: Plant) -> None:
    p.extra["log"].parent.mkdir(parents=True, exist_ok=True)
    with open(p.extra["log"], "a") as fh:
        fh.write("$ cmake --build\n")


def with_harness(p: Plant) -> None:
    from build_steps import compile as compile_step
    from build_steps.own_files import PlantedLink
    with pytest.raises(PlantedLink, match="harness-logs: it is a symbolic link"):
        compile_step.open_compile_log(p.extra["log"])
