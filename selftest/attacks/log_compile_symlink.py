"""Configure (the tree's CMake, in its sandbox) made ``build/harness-logs/compile.log`` a symbolic
link into the harness's own ``.venv``: the harness appended the compile's output to it and so
created a ``.pth`` file there, which runs at every later start of that Python (issue 41, 4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from selftest.attacks._payload import Plant


def plant(tmp: Path) -> Plant:
    venv_site = tmp / "harness-venv" / "lib" / "python3" / "site-packages"
    venv_site.mkdir(parents=True)
    marker = venv_site / "zz_attacker.pth"
    logs = tmp / "build" / "harness-logs"
    logs.mkdir(parents=True)
    (logs / "compile.log").symlink_to(marker)
    return Plant(tmp, marker, {"log": logs / "compile.log"})


def without_fix(p: Plant) -> None:
    with open(p.extra["log"], "a") as fh:
        fh.write("import os\n")


def with_harness(p: Plant) -> None:
    from build_steps import compile as compile_step
    from build_steps.own_files import PlantedLink
    with pytest.raises(PlantedLink, match="compile.log: it is a symbolic link to .*zz_attacker.pth"):
        compile_step.open_compile_log(p.extra["log"])
