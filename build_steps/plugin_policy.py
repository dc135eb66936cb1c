"""Only the harness's own plugins, conftests and gate modules take part in a release run (issue 29).

A release verdict is only as good as the code that files it. Anything pytest loads runs inside the
harness with its privileges and can rewrite any report: a ``conftest.py`` of the tree under test
(reached through a path option or a positional argument), a module named by ``PYTEST_PLUGINS`` or
``-p``, a distribution's ``pytest11`` entry point, a rerun plugin, or test files elsewhere whose
node ids alias the release set's (``--rootdir``). A release run (``-m release``, ``--publish``,
``--release-report``) therefore:

- refuses a foreign conftest before pytest imports it (harness.plugins.plugin_guard is loaded with ``-p``, so
  its ``pytest_load_initial_conftests`` runs before pytest's own), and any that gets registered later;
- lists its plugins when it is configured and refuses every one that is not pytest's, the
  harness's or a declared dependency's (pytest-xdist, pytest-timeout), naming each;
- refuses a rerun plugin that would rerun (``--reruns``, the ``reruns`` ini; a ``flaky`` marker could
  only sit in a gate module, whose bytes the manifest pins), and the ``flaky`` plugin outright: a
  gate that failed once is a failed gate. Refused, not counted: the run would otherwise build for an hour to end
  in a verdict that is known at the start. A rerun plugin that is installed but idle (the
  selftest extra installs pytest-rerunfailures) is let be; harness.plugins.ledger files any rerun as a
  failure all the same, so a non-release run's table cannot show one as a pass either;
- refuses a rootdir other than the harness's, a gate module whose bytes are not the ones its
  release manifest recorded, and a gate id collected from any file but the harness's own;
- refuses credential-shaped variables in its environment that no ``--credential-for`` explains
  (publishing is its own step: ``mxnet-release publish``).

This module is the policy as plain code; harness.plugins.plugin_guard applies it in pytest's hooks.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from .errors import UsageError
from .pinning import sha256_of
from .release_manifest import FLAVORS, load_manifest

HARNESS_ROOT = Path(__file__).resolve().parent.parent
#: where the harness's own code lives (never its .venv, which holds third-party code)
OWN_DIRS = tuple(HARNESS_ROOT / d for d in ("harness", "build_steps", "tests", "tools", "selftest"))
#: plugin modules of pytest itself and of the declared dependencies (pyproject.toml)
ALLOWED_MODULES = ("_pytest", "pytest", "xdist", "pytest_timeout")
#: rerun plugins: their module -> what makes them rerun
RERUN_PLUGINS = {"pytest_rerunfailures": "--reruns / the reruns ini",
                 "flaky": "the flaky plugin"}


def inside(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False


def is_own_conftest(path: Path) -> bool:
    """The root conftest.py and those under tests/: the only conftests of a release run."""
    path = Path(path).resolve()
    return path == HARNESS_ROOT / "conftest.py" or inside(path, HARNESS_ROOT / "tests")


def foreign_plugin(name: str, plugin: object) -> str | None:
    """What ``plugin`` (registered as ``name``) is, when it is not pytest's, the harness's or a declared
    dependency's; None when it is one of those."""
    # A plugin registered as a class (pytest's own legacypath registers LegacyTestdirPlugin so, when
    # pytester is loaded) is judged by the class's module, not by ``type``'s (builtins).
    owner = plugin if isinstance(plugin, type) else type(plugin)
    module = plugin if isinstance(plugin, ModuleType) else sys.modules.get(owner.__module__)
    modname = module.__name__ if module is not None else owner.__module__
    path = getattr(module, "__file__", None)
    if path and Path(path).name == "conftest.py":
        return None if is_own_conftest(Path(path)) else f"conftest {Path(path).resolve()}"
    top = modname.split(".")[0]
    if top in ALLOWED_MODULES:
        return None
    if path and any(inside(Path(path).resolve(), d) for d in OWN_DIRS):
        return None
    if modname.split(".")[0] in RERUN_PLUGINS:
        return None  # judged by _active_rerun_plugins
    where = f" ({path})" if path else ""
    return f"plugin {name!r}: module {modname}{where}"


def conftest_candidates(anchor: Path, confcutdir: Path | None) -> list[Path]:
    """The conftest.py files pytest would import for the command-line path ``anchor``: in its dir
    and every dir above (not above confcutdir), and in its test* subdirs."""
    dirs = [anchor] if anchor.is_dir() else [anchor.parent]
    if anchor.is_dir():
        dirs += [d for d in anchor.glob("test*") if d.is_dir()]
    out: list[Path] = []
    for d in dirs:
        for p in [*reversed(d.parents), d]:
            if confcutdir is not None and p in confcutdir.parents:
                continue
            conftest = p / "conftest.py"
            if conftest.is_file() and conftest not in out:
                out.append(conftest)
    return out


def manifest_modules() -> dict[str, str]:
    """relpath -> sha256 of every gate module any flavor's manifest records (UsageError: unreadable)."""
    modules: dict[str, str] = {}
    for flavor in FLAVORS:
        modules.update(load_manifest(flavor).modules)
    return modules


def checked_gate_modules() -> dict[str, str]:
    """manifest_modules(), once every gate module on disk has the bytes they record; UsageError naming
    those that differ."""
    modules = manifest_modules()
    if not modules:
        raise UsageError("the release manifests record no gate module hashes; regenerate them "
               "with python -m harness.release_set --write")
    changed = []
    for rel, digest in sorted(modules.items()):
        path = HARNESS_ROOT / rel
        have = sha256_of(path) if path.is_file() else "no such file"
        if have != digest:
            changed.append(rel)
    if changed:
        raise UsageError(
            f"release run refused: gate module(s) {', '.join(changed)} are not the ones the release "
            "manifests recorded (their sha256 differs): a release runs the gates the set was made from. "
            "Commit the change and regenerate with python -m harness.release_set --write")
    return modules
