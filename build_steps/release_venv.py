"""The run's throwaway venv: made, the pinned wheel and its requirements installed (harness.plugins.runtime's
release_venv fixture runs it once for every xdist worker)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from . import filesystem, venv
from .errors import EnvironmentFault, StepError, log_tail
from .heartbeat import heartbeat
from .options import RunOptions
from .profile_data import GATE_TEST_REQUIREMENTS


def make_release_venv(root: Path, log: Path, options: RunOptions, wheel_path: Path,
                      pinned: Callable[[], Path], say: Callable[[str], None]) -> dict[str, Any]:
    """The venv in ``root`` with the wheel (``pinned()``: its private copy, checked) and its
    requirements; its run-once record. A full disk is the host's fault: the wheel is not judged."""
    say(f"==> installing the wheel and its requirements into {root} (log: {log})")
    with heartbeat("install", log, say):
        try:
            made = venv.create_venv(root, options.build_python or sys.executable, log=log, pass_env=options.pass_env)
            installed = venv.install(
                made, pinned(), find_links=options.find_links, index_url=options.index_url,
                extra_requirements=options.extra_requirements, test_requirements=GATE_TEST_REQUIREMENTS,
                no_deps=options.no_deps, no_index=options.no_index, log=log)
            return {**made.to_dict(), "installed": installed, "log": str(log), "wheel": str(wheel_path)}
        except StepError as exc:
            # pip's "No space left on device" names the venv dir, or its TMPDIR (unpacked wheels)
            full = filesystem.full_one([root, filesystem.tmpdir()], exc.tail, log_tail(log))
            if full is None:
                raise
            raise EnvironmentFault(exc.step, f"{str(exc).splitlines()[0].split('] ', 1)[-1]}: "
                                   f"{filesystem.no_space(full)}", log=exc.log, tail=exc.tail) from None
