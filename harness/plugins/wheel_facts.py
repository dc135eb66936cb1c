"""The wheel under test, extracted once, and the facts every static gate reads (the provenance
gates' verdicts are the ledger's: the end of the run reports them, terminal summary and
``--provenance-json``)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from build_steps.readers.audit import collect
from build_steps.once import shared_product
from build_steps.errors import HarnessError, WheelUnusable
from build_steps.pinning import verify
from build_steps.readers.wheel import extract_wheel

from ..exits import refuse
from ..pin_record import pin_once
from ..state import the_run

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.pinning import WheelPin
    from build_steps.readers.audit import Audit
    from build_steps.readers.loader import ObjectInfo
    from build_steps.readers.wheel import ExtractedWheel


@pytest.fixture(scope="session")
def wheel_path(wheel_pin: WheelPin) -> Path:
    """The wheel under test (``--wheel PATH``, else the chain's build), as pinned for this run
    (harness.plugins.wheel_pin): same name, the bytes hashed when the run started."""
    return Path(wheel_pin.path)


def _extract_once(wheel_pin: WheelPin, shared_dir: Path) -> ExtractedWheel:
    def extract() -> ExtractedWheel:
        try:
            return extract_wheel(verify(wheel_pin, "extraction"), shared_dir / "wheel")
        except WheelUnusable:
            raise
        except HarnessError as exc:
            raise WheelUnusable(str(exc)) from None
    return shared_product(shared_dir, "extracted-wheel", extract)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--wheel``: extract it now, before any gate. What only the inflated bytes tell (a CRC-32
    that pip refuses, a deflate stream that is broken or longer than declared) is then bad input,
    one line and exit 4, like what the headers tell (build_steps.options.check_wheel_path), instead
    of an error at the first gate. A built wheel is extracted when a gate first needs it.
    tryfirst: before xdist starts its workers, which a refused wheel does not need."""
    run = the_run(session.config)
    if run.mode != "audit" or run.is_worker or session.config.option.collectonly:
        return
    wheel = run.options.wheel
    try:
        _extract_once(pin_once(run.shared, wheel), run.shared)  # type: ignore[arg-type]  # an audit has --wheel
    except WheelUnusable as exc:
        refuse(f"--wheel {wheel}: {exc}")


@pytest.fixture(scope="session")
def extracted_wheel(wheel_pin: WheelPin, shared_dir: Path) -> ExtractedWheel:
    """The wheel, extracted (RECORD verified while extracting) once for all xdist workers. A wheel
    that cannot be extracted is one fault: the first gate reports it and the run stops (with
    ``--wheel`` it was extracted when the session started, see above)."""
    return _extract_once(wheel_pin, shared_dir)


@pytest.fixture(scope="session")
def audit(extracted_wheel: ExtractedWheel, options: RunOptions, shared_dir: Path) -> Audit:
    """Every fact the static gates judge (build_steps.readers.audit.collect), computed once."""
    return shared_product(shared_dir, "audit", lambda: collect(extracted_wheel, options))


@pytest.fixture(scope="session")
def libmxnet_info(audit: Audit) -> ObjectInfo:
    """libmxnet.so's dynamic facts; a gate that needs them fails with the reason they are missing."""
    if audit.libmxnet_error or audit.libmxnet is None:
        pytest.fail(f"cannot check: {audit.libmxnet_error}", pytrace=False)
    return audit.libmxnet
