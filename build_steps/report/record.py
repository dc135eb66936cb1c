"""The run record: what the end of the run knows, as plain typed data (issue 47 items 3 and 5).

``RunRecord`` holds the ledger's entries, the chain's typed products (each step's ``from_json``),
the pin, the audit, the options and the few facts of the invocation the reports name (the ``-m``
selection, ``--review-page``, ``--gpu-reports``, xdist or not). The report document, the review
page, the JSON report, the summary lines and the wheel's placement are functions of it
(build_steps.report.document, build_steps.report.placement), so a selftest calls them on a record it
builds, without a pytest session.

``harness.run_record.record_of(run)`` is the one place that reads a run (its config, its shared dir)
into a record: the end of the run (harness.plugins.finish) calls it once, after every gate reported.
"""
from __future__ import annotations

import platform
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union

from build_steps import sandbox
from build_steps.bundle import StagedRecord
from build_steps.build_chain import CHAIN
from build_steps.compile import CompileResult
from build_steps.configure import ConfigureResult
from build_steps.cuda_root import CudaRoot
from build_steps.gate_ledger import Clock, Entry
from build_steps.opencv_build import OpenCVBuild
from build_steps.package import PackageResult
from build_steps.source import SourceInfo

from ..errors import NOT_JUDGED
from ..release_manifest import ReleaseSet

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.pinning import WheelPin
    from build_steps.readers.audit import Audit

#: a run builds (--mxnet-src) or audits (--wheel)
Mode = Literal["build", "audit"]

Product = Union[SourceInfo, CudaRoot, OpenCVBuild, ConfigureResult, CompileResult, StagedRecord, PackageResult]

#: ChainProducts' field -> the chain row's record key and the product's type: the one table that
#: names the records (checked against build_steps.build_chain.CHAIN below, so a renamed step fails loudly)
_PRODUCTS: dict[str, tuple[str, type[Product]]] = {
    "source": ("source", SourceInfo),
    "cuda_root": ("cuda_root", CudaRoot),
    "opencv": ("opencv", OpenCVBuild),
    "configure": ("configure", ConfigureResult),
    "compile": ("compile", CompileResult),
    "stage": ("stage", StagedRecord),
    "wheel": ("built_wheel", PackageResult),
}
if sorted(key for key, _t in _PRODUCTS.values()) != sorted(step.record for step in CHAIN):
    raise TypeError("build_steps.report.record._PRODUCTS must name every record of build_steps.build_chain.CHAIN, and only those")


@dataclass(frozen=True)
class StepEnd:
    """How a step that made no product ended: failed, or interrupted (its first error line)."""
    interrupted: bool = False
    error: str = ""
    not_judged: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"failed": True, "error": self.error, "interrupted": self.interrupted, "not_judged": self.not_judged}

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> StepEnd:
        return cls(interrupted=bool(rec.get("interrupted")), error=str(rec.get("error") or ""),
                   not_judged=bool(rec.get("not_judged")))


@dataclass(frozen=True)
class ChainProducts:
    """The chain's typed products, one per step that made one, and how each other step ended."""
    source: SourceInfo | None = None
    cuda_root: CudaRoot | None = None
    opencv: OpenCVBuild | None = None
    configure: ConfigureResult | None = None
    compile: CompileResult | None = None
    stage: StagedRecord | None = None
    wheel: PackageResult | None = None
    #: record key -> how the step ended without a product (failed or interrupted)
    ended: Mapping[str, StepEnd] = field(default_factory=dict)
    #: the steps after the chain (the venv's install) that failed: label -> how
    after: Mapping[str, StepEnd] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Mapping[str, Mapping[str, Any]],
                     after: Mapping[str, Mapping[str, Any]] | None = None) -> ChainProducts:
        """The products of the run-once records (build_steps.build_chain.chain_records), each by its type's from_json."""
        products: dict[str, Any] = {}
        ended: dict[str, StepEnd] = {}
        for name, (key, kind) in _PRODUCTS.items():
            rec = records.get(key)
            if rec is None:
                continue
            if rec.get("failed"):
                ended[key] = StepEnd.from_json(rec)
            else:
                products[name] = kind.from_json(rec.get("result"))
        return cls(**products, ended=ended, after={k: StepEnd.from_json(v) for k, v in (after or {}).items()})

    def product(self, record: str) -> Product | None:
        """The product of the step whose record key is ``record`` (None: it made none)."""
        name = next(n for n, (key, _t) in _PRODUCTS.items() if key == record)
        value: Product | None = getattr(self, name)
        return value

    def records(self) -> dict[str, dict[str, Any]]:
        """The run-once records these products are (build_steps.build_chain' summary functions read them)."""
        out: dict[str, dict[str, Any]] = {}
        for step in CHAIN:
            product = self.product(step.record)
            if step.record in self.ended:
                out[step.record] = self.ended[step.record].to_json()
            elif product is not None:
                out[step.record] = {"failed": False, "result": product.to_json()}
        return out

    def after_records(self) -> dict[str, dict[str, Any]]:
        return {label: end.to_json() for label, end in self.after.items()}

    def ran(self) -> bool:
        return bool(self.ended) or any(getattr(self, f.name) is not None for f in fields(self)
                                       if f.name in _PRODUCTS)


@dataclass(frozen=True)
class HostFacts:
    """The host the report was made on, measured once (report_doc names them)."""
    name: str
    os: str
    python: str
    #: who the tree's and the wheel's code ran as, measured in a sandbox (build_steps.sandbox.identity)
    sandbox: dict[str, Any] | None = None

    @classmethod
    def measure(cls) -> HostFacts:
        return cls(name=socket.gethostname(), os=_os_name(), python=platform.python_version(),
                   sandbox=sandbox.identity())


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.platform()
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)', text, re.M)
    return m.group(1) if m else platform.platform()


@dataclass(frozen=True)
class RunRecord:
    """Everything the end of the run's reports read, as data (no pytest object inside)."""
    options: RunOptions
    #: the ledger's entries: nodeid -> the gate's verdict and facts (harness.state.Entry)
    entries: Mapping[str, Entry] = field(default_factory=dict)
    chain: ChainProducts = field(default_factory=ChainProducts)
    pin: WheelPin | None = None
    #: the static gates' facts (harness.plugins.wheel_facts), None when no wheel was audited
    audit: Audit | None = None
    #: the flavor's release set, with the release gates this run collected from elsewhere
    release_set: ReleaseSet | None = None
    #: nodeid -> markers of every release gate collected (harness.plugins.collected_gates)
    collected: Mapping[str, list[str]] = field(default_factory=dict)
    #: the ``-m`` expression (None: none given)
    selection: str | None = None
    #: ``--review-page`` and ``--gpu-reports`` (None: not given)
    review_page: Path | None = None
    gpu_reports: Path | None = None
    #: the run had xdist workers (its setup and gate times are summed over them)
    xdist: bool = False
    collect_only: bool = False
    allow_gpu_skips: bool = False
    #: the run's clock, and time.monotonic() when the gates were done (the page's timeline)
    clock: Clock | None = None
    ended: float = 0.0
    #: gate id suffix -> "K/N" of each split shard part (harness.shard_plan.split_parts)
    split_parts: Mapping[str, str] = field(default_factory=dict)
    #: GPU shard gates the fork's own script would not run on this tree: id -> why
    excused_gpu: Mapping[str, str] = field(default_factory=dict)
    #: measured when a report is made (HostFacts.measure)
    host: HostFacts | None = None
    #: why the CPU-side runtime gates ran with the stand-in libcuda.so.1 (None: they did not)
    driver_stub: str | None = None
    #: the run's exit status so far, and where the placement row put the built wheel
    exitstatus: int | None = None
    placed_wheel: str | None = None

    @property
    def mode(self) -> Mode:
        return "audit" if self.options.wheel is not None else "build"

    @property
    def gpu_runs(self) -> dict[str, dict[str, Any]]:
        """nodeid -> the GPU gate's verdict and the GPU it ran on."""
        return {n: e.gpu_run for n, e in self.entries.items() if e.gpu_run is not None}

    @property
    def provenance_verdicts(self) -> dict[str, tuple[str, str]]:
        """nodeid -> (outcome, why) of every provenance gate."""
        return {n: e.provenance for n, e in self.entries.items() if e.provenance is not None}

    @property
    def not_judged(self) -> list[tuple[str, str]]:
        """(nodeid, why) of the gates the host kept from judging the wheel."""
        return sorted((n, e.why) for n, e in self.entries.items() if e.verdict == NOT_JUDGED)
