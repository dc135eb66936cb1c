"""The throwaway venv with the wheel under test, and the probes that run in its interpreter.

One venv for all xdist workers, made the same way for ``--wheel PATH`` and for the wheel the
build chain made; removed by the last worker at session end unless ``--keep-venv``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import pytest

from build_steps import once, requirements_preflight, venv
from build_steps.build_chain import guarded
from build_steps.cuda_stack import cublas_probe_args
from build_steps.driver_stub import STUB_ENV, STUB_RECORD, stub_record
from build_steps.once import run_once
from build_steps.pinning import verify
from build_steps.profile_data import GATE_TEST_REQUIREMENTS
from build_steps.release_venv import make_release_venv

from ..common import say
from ..exits import refuse
from ..state import the_run

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.pinning import WheelPin
    from build_steps.profile_data import Profile

HARNESS_ROOT = Path(__file__).resolve().parents[2]
PROBES_DIR = HARNESS_ROOT / "tests" / "probes"
CUBLAS_PROBE = PROBES_DIR / "cublas_probe.py"
_VENV_KEY = "release-venv"


def load_probe(name: str) -> ModuleType:
    """A probe script of tests/probes imported as a module, for the gates that also use its
    helpers in-process (the scripts are not a package: they run in the venv's interpreter)."""
    import importlib.util
    key = f"_mxnet_probe_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, PROBES_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]  # the file exists
        sys.modules[key] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[key]


#: The gate modules whose gates need the venv (release_venv and what is made in it), with their
#: marks (each module's pytestmark; selftest/test_requirements_preflight.py holds this table to the
#: modules). A run whose ``-m`` and ``-k`` can select none of them never installs the venv, so it is
#: not preflighted: the session-start hook runs before collection (in xdist's controller, which never
#: collects), so it judges the selection by module, not by gate.
VENV_GATE_MODULES: dict[str, frozenset[str]] = {
    "test_install.py": frozenset({"release", "build"}),
    "test_acceptance.py": frozenset({"release", "runtime", "acceptance"}),
    "test_runtime_features.py": frozenset({"release", "runtime"}),
    "test_gpu_smoke.py": frozenset({"release", "runtime", "gpu"}),
    "test_cublas.py": frozenset({"release", "runtime", "gpu", "cublas"}),
    "test_onnx_roundtrip.py": frozenset({"release", "runtime", "onnx"}),
    "test_opencv_roundtrip.py": frozenset({"release", "runtime", "opencv"}),
}


def installs_venv(markexpr: str | None, keywordexpr: str | None = None) -> bool:
    """Whether a run selected by ``-m markexpr`` and ``-k keywordexpr`` can select a gate that
    installs the venv. ``-k`` is matched as pytest matches it (a substring of a name, any case)
    against what every gate of a module carries: the module's file name, ``tests`` and its marks.
    So ``-k "not install"`` leaves test_install.py out; a ``-k`` naming single gates of a module
    matches nothing here and the preflight is left to the install step (never a refusal of a run
    that installs nothing)."""
    from _pytest.mark.expression import Expression
    try:
        mexpr = Expression.compile(markexpr) if (markexpr or "").strip() else None  # type: ignore[arg-type]
        kexpr = Expression.compile(keywordexpr) if (keywordexpr or "").strip() else None  # type: ignore[arg-type]
    except SyntaxError:
        return False  # pytest says what is wrong with it
    return any((mexpr is None or mexpr.evaluate(_marked(marks)))
               and (kexpr is None or kexpr.evaluate(_named({module, "tests", *marks})))
               for module, marks in VENV_GATE_MODULES.items())


def _marked(marks: frozenset[str]) -> Callable[..., bool]:
    """``-m``'s matcher for a gate carrying ``marks``."""
    def match(name: str, /, **_kwargs: str | int | bool | None) -> bool:
        return name in marks
    return match


def _named(names: set[str]) -> Callable[..., bool]:
    """``-k``'s matcher (pytest's KeywordMatcher: a case-insensitive substring of any name)."""
    lowered = [n.lower() for n in names]

    def match(subname: str, /, **_kwargs: str | int | bool | None) -> bool:
        return any(subname.lower() in n for n in lowered)
    return match


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The requirements the venv installs beside the wheel, resolved against the run's index options
    before anything is built (build_steps.requirements_preflight): an index that cannot satisfy
    them is one line and exit 4, in seconds, instead of every runtime gate erroring after the
    compile. Once per run: tryfirst, in the controller, before xdist starts its workers."""
    config = session.config
    run = the_run(config)
    if run.is_worker or config.option.collectonly or not installs_venv(config.option.markexpr,
                                                                          config.option.keyword):
        return
    options = run.options
    if run.mode == "build" and run.plan.source is None:
        return  # a run that names no MXNet tree builds nothing (collection says why)
    found = requirements_preflight.check(
        [*options.extra_requirements, *GATE_TEST_REQUIREMENTS], python=options.build_python,
        find_links=options.find_links, index_url=options.index_url, no_index=options.no_index,
        pass_env=options.pass_env)
    if found.refusal:
        refuse(found.refusal)
    if found.not_checked:
        say(f"==> requirements not checked before the build: {found.not_checked}; the install step will say "
            "whether the venv can be made")
    elif found.reused_age is not None:
        say(f"==> requirements resolved by {found.installer} {found.reused_age / 60:.1f} min ago, for the same "
            f"inputs (reused; the install step resolves them again): {', '.join(found.requirements)}")
    else:
        say(f"==> requirements resolved by {found.installer} in {found.seconds:.1f}s: "
            f"{', '.join(found.requirements)}")


@pytest.fixture(scope="session")
def release_venv(options: RunOptions, wheel_path: Path, wheel_pin: WheelPin, shared_dir: Path) -> Iterator[venv.Venv]:
    """The venv (in --venv-dir or the run's shared temp dir) with the wheel and its deps installed."""
    root = options.venv_dir or (shared_dir / "release-venv")
    log = shared_dir / "release-venv-install.log"

    product = once.acquire(shared_dir, _VENV_KEY, guarded("install", lambda: make_release_venv(
        root, log, options, wheel_path, lambda: verify(wheel_pin, "the venv install"), say), root))
    yield venv.Venv.from_dict(product)
    cleanup = None if options.keep_venv else (lambda p: venv.remove_venv(Path(p["root"])))
    once.release(shared_dir, _VENV_KEY, cleanup)


@pytest.fixture(scope="session")
def install_report(release_venv: venv.Venv, options: RunOptions, wheel_path: Path) -> dict[str, Any]:
    """check_install's facts: where mxnet and libmxnet.so resolve in the venv, and the version."""
    return venv.check_install(release_venv, venv.expected_version(wheel_path, options.package_version))


#: Probes that use no GPU: on a host without the driver they run with the driver stub.
CPU_SIDE_PROBES = ("probe_opencv.py", "probe_onnx.py", "probe_features.py")


@pytest.fixture(scope="session")
def driver_stub(release_venv: venv.Venv, install_report: dict[str, Any], shared_dir: Path) -> str | None:
    """The stand-in libcuda.so.1 (build_steps.driver_stub) when the installed libmxnet.so needs
    libcuda.so.1 and the host has no driver; None otherwise. Made once; reported at the end."""
    return cast("str | None", run_once(shared_dir, STUB_RECORD, lambda: stub_record(
        install_report.get("libmxnet") or [], release_venv.python, release_venv.env(), shared_dir / "driver-stub"))["stub"])


@pytest.fixture(scope="session")
def venv_probe(release_venv: venv.Venv, tmp_path_factory: pytest.TempPathFactory,
               request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """``venv_probe("probe_x.py", *args, timeout=..)`` runs a probe in the venv, returns its dict."""
    def _probe(name: str, *args: object, timeout: float = 600, env: dict[str, str] | None = None) -> dict[str, Any]:
        if name in CPU_SIDE_PROBES:
            stub = request.getfixturevalue("driver_stub")
            env = {**(env or {}), STUB_ENV: stub} if stub else env
        return venv.run_probe(release_venv, PROBES_DIR / name, args, timeout=timeout, env=env,
                                   cwd=tmp_path_factory.mktemp("probe"))
    return _probe


@pytest.fixture(scope="session")
def cuda_preflight(release_venv: venv.Venv, profile: Profile, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The ctypes cuBLAS/driver preflight, run in the venv's interpreter before any MXNet import:
    driver and GPUs, the cuBLAS the wheel would load (the venv's pip dir of the profile's CUDA
    stack first, e.g. nvidia/cu13/lib), its version and the verdict on the stack's known traps.
    Works where MXNet cannot load. The probe cannot read profiles.toml: the stack's facts are
    its arguments."""
    return venv.run_probe(release_venv, CUBLAS_PROBE,
                               ["preflight", "--search-dir", str(release_venv.site_packages),
                                *cublas_probe_args(profile)],
                               timeout=300, cwd=tmp_path_factory.mktemp("preflight"))
