"""The build chain as session fixtures (one per row of build_steps.build_chain.CHAIN) and the checks made
before a build starts. The end of the chain (the wheel to dist/ or set aside, the chain's summary
lines) is a row of the end of the run (harness.plugins.finish, build_steps.report.placement).
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable

import pytest

from build_steps import launcher, preflight, source
from build_steps.cuda_root import default_cache_dir
from build_steps.build_chain import CHAIN, Step, StepInputs, guarded
from build_steps.errors import UsageError
from build_steps.once import run_once
from build_steps.run_plan import BuildPaths, RunPlan

from ..common import LIVE
from ..exits import refuse
from ..state import HarnessRun, the_run

#: this checkout: its tests/ holds the gates
HARNESS_ROOT = Path(__file__).resolve().parents[2]

def pytest_configure(config: pytest.Config) -> None:
    LIVE.config = config


def _distributed(config: pytest.Config) -> bool:
    """Whether xdist runs this session's gates in workers (its controller collects nothing)."""
    return config.pluginmanager.hasplugin("dsession")


def _collects_every_gate(config: pytest.Config) -> bool:
    """Whether the session's paths hold the whole of tests/ (mxnet-release's default): then the
    build chain's gates are among them. A session naming single modules (the selftests' runs of
    the publish gate) or none of the gates (the selftests themselves) is left to the workers'
    collection, which knows whether a gate asks for the tree."""
    gates = HARNESS_ROOT / "tests"
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
        if path == gates or path in gates.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Under xdist the checks below run here, once, in the controller: raised in the workers'
    # collection, a refusal crashed each worker (INTERNALERROR, exit 3) instead of one line, exit 4.
    # The controller has no items, so it checks a run whose -m can select a build.
    config = session.config
    run = the_run(config)
    if (not run.is_worker and _distributed(config) and run.mode == "build" and not config.option.collectonly
            and _collects_every_gate(config) and run.plan.selects_build):
        _refuse_or_go(run)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A run that will build is checked here, once, before anything starts: the tree exists, the
    # selection is one that builds, and nothing known now would fail the release hours later.
    run = the_run(config)
    if run.mode == "audit" or not any("mxnet_source" in getattr(i, "fixturenames", ()) for i in items):
        return
    if not run.plan.selects_build:
        refuse(
            f"-m {config.option.markexpr!r} selects gates that audit an existing wheel and never builds one: "
            "pass --wheel=PATH (or select -m release to build and verify a wheel from --mxnet-src)")
    if not run.is_worker:  # a worker's controller checked at session start
        _refuse_or_go(run)


def _refuse_or_go(run: HarnessRun) -> None:
    """pytest.UsageError (exit 4, one block) naming what would fail this build, else nothing."""
    options, plan = run.options, run.plan
    try:
        # the cache is a place this build writes only for what the flags say (preflight.space_needs)
        refused = preflight.refusals(plan.tree(), options.profile, options.cuda_arch, options.cmake_defines,
                                     release=plan.release, allow_dirty=options.allow_dirty,
                                     build_dir=plan.build_paths().build_dir, cache=default_cache_dir(),
                                     cuda_wheels=options.cuda_from_wheels,
                                     compiler_cache=plan.compiler_launcher().name == "sccache",
                                     allow_untracked=options.allow_untracked)
    except UsageError as exc:
        refuse(exc)
    if refused:
        refuse("refusing to build (nothing was configured or compiled):\n  - "
               + "\n  - ".join(refused))


@pytest.fixture(scope="session")
def run_plan(request: pytest.FixtureRequest) -> RunPlan:
    return the_run(request.config).plan


@pytest.fixture(scope="session")
def build_paths(run_plan: RunPlan, mxnet_source: source.SourceInfo) -> BuildPaths:
    return run_plan.build_paths()


@pytest.fixture(scope="session")
def compiler_launcher(run_plan: RunPlan) -> launcher.Launcher:
    """--compiler-launcher resolved to a tool on this host (sccache, ccache or none)."""
    return run_plan.compiler_launcher()


def _fixture_of(step: Step) -> Callable[..., Any]:
    """The session fixture of a chain step: pytest asks for ``needs`` by the function's signature."""
    def step_fixture(**needs: Any) -> Any:
        n = StepInputs(progress=LIVE, **needs)
        applies = step.applies(n)
        if isinstance(applies, str):
            pytest.skip(applies)
        if not applies:
            return None
        return step.from_json(run_once(n.shared_dir, step.record, guarded(step.name, lambda: step.produce(n),
                                                                          step.where(n))))
    step_fixture.__name__ = step.fixture
    step_fixture.__doc__ = f"The build step {step.name!r} (build_steps.build_chain.CHAIN), run once for the run."
    step_fixture.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # pytest reads it
        [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in step.needs])
    return pytest.fixture(scope="session", name=step.fixture)(step_fixture)


# The steps' session fixtures, one per row of the chain's table, each named here so that grep finds
# where a fixture a gate asks for comes from. A row without its line here is refused at import.
_STEP_FIXTURES = {step.fixture: _fixture_of(step) for step in CHAIN}
mxnet_source = _STEP_FIXTURES.pop("mxnet_source")
cuda_root = _STEP_FIXTURES.pop("cuda_root")
built_opencv = _STEP_FIXTURES.pop("built_opencv")
configured_tree = _STEP_FIXTURES.pop("configured_tree")
libmxnet = _STEP_FIXTURES.pop("libmxnet")
staged_package = _STEP_FIXTURES.pop("staged_package")
built_wheel = _STEP_FIXTURES.pop("built_wheel")
if _STEP_FIXTURES:
    raise ImportError(f"harness.plugins.chain: name the fixture(s) of the new chain step(s) {sorted(_STEP_FIXTURES)} here")
