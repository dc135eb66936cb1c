"""Only the harness's own plugins, conftests and gate modules take part in a release run (issue 29):
this plugin enforces build_steps.plugin_policy, whose docstring says what a release run refuses and
why, from before pytest imports the first conftest (pytest.ini loads it with ``-p``) to collection."""
from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from build_steps.credentials import parse_credential_steps, unexplained_credentials
from build_steps.errors import UsageError
from build_steps.plugin_policy import (HARNESS_ROOT, RERUN_PLUGINS, checked_gate_modules, conftest_candidates,
                                       foreign_plugin, inside, is_own_conftest)
from build_steps.run_plan import release_requested

from ..exits import refuse

def _is_release_config(config: pytest.Config) -> bool:
    opt = config.option
    return release_requested(getattr(opt, "markexpr", ""), getattr(opt, "publish", False),
                             getattr(opt, "release_report", None))


def _initial_anchors(early_config: pytest.Config) -> list[Path]:
    """The command line's paths (or pytest's fallback: testpaths, else the cwd), as pytest takes them."""
    ns = early_config.known_args_namespace
    args, _ = early_config._decide_args(
        args=ns.file_or_dir, pyargs=ns.pyargs, testpaths=early_config.getini("testpaths"),
        invocation_dir=early_config.invocation_params.dir, rootpath=early_config.rootpath, warn=False)
    anchors: list[Path] = []
    for arg in args:
        anchor = (early_config.invocation_params.dir / str(arg).split("::")[0]).absolute()
        try:
            if anchor.exists():
                anchors.append(anchor)
        except OSError:
            continue
    return anchors


def foreign_initial_conftests(early_config: pytest.Config) -> list[Path]:
    ns = early_config.known_args_namespace
    confcutdir = Path(ns.confcutdir).resolve() if ns.confcutdir else None
    found: list[Path] = []
    for anchor in _initial_anchors(early_config):
        found += [c for c in conftest_candidates(anchor, confcutdir) if not is_own_conftest(c) and c not in found]
    return found


def foreign_dirs(early_config: pytest.Config) -> list[Path]:
    """Directories outside the harness's tests/ that pytest would collect, recursing (and importing
    every conftest.py below them): plain pytest collects the cwd when no path is given."""
    gates = HARNESS_ROOT / "tests"
    return [a for a in _initial_anchors(early_config)
            if a.is_dir() and not inside(a.resolve(), gates)]


def _refuse_rootdir(rootpath: Path) -> None:
    if Path(rootpath).resolve() != HARNESS_ROOT:
        refuse(
            f"release run with rootdir {rootpath}: a release run's gate ids are those of the harness "
            f"at {HARNESS_ROOT} (tests of another rootdir could stand in for them); drop --rootdir "
            "or -c, or use mxnet-release, which sets both")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    ns = early_config.known_args_namespace
    if not release_requested(ns.markexpr, getattr(ns, "publish", False), getattr(ns, "release_report", None)):
        return
    _refuse_rootdir(early_config.rootpath)
    foreign = foreign_initial_conftests(early_config)
    if foreign:
        refuse(
            f"release run refused: {', '.join(map(str, foreign))} would be imported into the harness "
            "(a conftest outside the harness's root can rewrite any verdict); only the harness's "
            "gates in tests/ take part in a release run: name no directory holding a foreign "
            "conftest.py on the command line, and write path options as --option=PATH")
    dirs = foreign_dirs(early_config)
    if dirs:
        refuse(
            f"release run refused: it would collect {', '.join(map(str, dirs))}, outside the harness's "
            f"gates ({HARNESS_ROOT / 'tests'}), importing any conftest.py below; name the harness's "
            "tests/ (plain pytest collects the current directory when given no path) or use mxnet-release")


def _active_rerun_plugins(config: pytest.Config) -> list[str]:
    out: list[str] = []
    for name, plugin in config.pluginmanager.list_name_plugin():
        mod = getattr(plugin, "__name__", "") if isinstance(plugin, ModuleType) else type(plugin).__module__
        top = (mod or "").split(".")[0]
        if plugin is None or top not in RERUN_PLUGINS:
            continue
        if top == "pytest_rerunfailures":
            reruns = getattr(config.option, "reruns", None)
            try:
                ini = config.getini("reruns")
            except (ValueError, KeyError):
                ini = None
            if not reruns and not ini:
                continue  # installed, idle: harness.plugins.ledger files a rerun as a failure anyway
            out.append(f"pytest-rerunfailures (--reruns={reruns or ini})")
        else:
            out.append(f"{name} ({RERUN_PLUGINS[top]})")
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    own = config.pluginmanager.get_plugin(str(HARNESS_ROOT / "conftest.py")) is not None
    if not own and (_is_release_config(config) or getattr(config.option, "mxnet_src", None)
                    or getattr(config.option, "wheel", None)):
        # pytest.ini's -p declares the options, but the harness itself (its root conftest, with the
        # ledger, the release set, the strict release rules) is loaded only along the paths given
        refuse(
            "the harness's root conftest.py was not loaded: the paths on the command line are all outside "
            f"{HARNESS_ROOT}, so none of its checks would run; name the harness's tests/ too, or use mxnet-release")
    if not _is_release_config(config):
        return
    _refuse_rootdir(config.rootpath)
    worker = hasattr(config, "workerinput")
    foreign = [why for name, plugin in config.pluginmanager.list_name_plugin()
               if plugin is not None and (why := foreign_plugin(name, plugin))
               # an xdist worker's own interactor: pytest-xdist's remote.py, run by execnet as this module
               and not (worker and type(plugin).__module__ == "__channelexec__")]
    if foreign:
        refuse(
            f"release run refused: {len(foreign)} plugin(s) that are not the harness's, pytest's or a "
            f"declared dependency's (pytest-xdist, pytest-timeout): {'; '.join(foreign)}. A plugin "
            "runs inside the harness and can rewrite any verdict: unset PYTEST_PLUGINS, drop -p, "
            "uninstall the distribution (or block it with -p no:NAME)")
    reruns = _active_rerun_plugins(config)
    if reruns:
        refuse(
            f"release run refused: {', '.join(reruns)} would rerun failed gates until they pass; a "
            "gate that failed once is a failed gate. Drop --reruns (and the reruns ini) for a release run")
    try:
        explained = parse_credential_steps(config.getoption("credential_for", None), _step_names())
    except UsageError as exc:
        refuse(exc)
    secrets = unexplained_credentials(os.environ, explained)
    if secrets:
        refuse(
            f"release run refused: credential-shaped variable(s) in its environment: {', '.join(secrets)}. "
            "The verify run needs no credential (publishing is its own step: mxnet-release publish "
            "--report=R); unset them, or name the build step that needs one with --credential-for NAME=STEP")
    _check_gate_modules(config)


def _check_gate_modules(config: pytest.Config) -> None:
    try:
        config.stash[_MODULES] = checked_gate_modules()
    except UsageError as exc:
        refuse(exc)


def _step_names() -> tuple[str, ...]:
    from build_steps.build_chain import STEP_NAMES
    return STEP_NAMES


_MODULES = pytest.StashKey[dict[str, str]]()


def pytest_plugin_registered(plugin: object, plugin_name: str, manager: pytest.PytestPluginManager) -> None:
    # A conftest met during collection (a subdirectory of a directory on the command line).
    path = getattr(plugin, "__file__", None) if isinstance(plugin, ModuleType) else None
    if path and Path(path).name == "conftest.py" and not is_own_conftest(Path(path)):
        _PENDING.append(Path(path).resolve())


_PENDING: list[Path] = []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _is_release_config(config):
        return
    late = [p for p in _PENDING if str(p) in {n for n, _ in config.pluginmanager.list_name_plugin()}]
    if late:
        refuse(
            f"release run refused: conftest {', '.join(map(str, late))} was imported while collecting; "
            "only the harness's gates in tests/ take part in a release run")
    modules = config.stash.get(_MODULES, {})
    aliased = []
    for item in items:
        rel = item.nodeid.split("::")[0]
        if rel in modules and Path(item.path).resolve() != HARNESS_ROOT / rel:
            aliased.append(f"{item.nodeid} (from {item.path})")
    if aliased:
        shown = "; ".join(aliased[:5]) + (f"; ... {len(aliased) - 5} more" if len(aliased) > 5 else "")
        refuse(
            f"release run refused: {len(aliased)} gate id(s) collected from files that are not the "
            f"harness's gate modules: {shown}. Only the gates in {HARNESS_ROOT / 'tests'} count")
