"""GPU verification fanned out: which release arch a GPU of that arch really ran MXNet on.

One GPU checks one arch, the wheel promises six. Each GPU runner runs the GPU gates on the same
wheel and writes its JSON report (``--provenance-json``); the report carries the wheel's sha256
and, per GPU gate, its verdict and the GPU gpu(0) was (name, compute capability). This module
merges a directory of such reports (the command line is tools/gpu_verify.py:
``python -m tools.gpu_verify DIR [--wheel=W] [--cuda-arch LIST]``) into one row per release SASS
arch (verified by which report and GPU, failed, or no GPU); the strict verdict names the archs no
GPU verified (or on which a GPU failed). Reports of another wheel
(another sha256) are never counted: with ``--wheel`` only that wheel's reports are, without it
the reports must all be of one wheel.

With ``--wheel`` the archs to verify are read from the wheel's own fatbins (every ELF in it that
has one), not from the list the reports say it was built with (report_arch). Each report must be a harness report
(REPORT_SCHEMA) no bigger than MAX_REPORT_BYTES; anything else is a usage error (exit 2) naming
the file. Two reports of one GPU (the same host and GPU UUID) count once.

An arch is verified only when the runs on GPUs of that arch passed, between them, every GPU gate of
the release set (the cuda manifest's ``gpu_gates``, build_steps.release_manifest) and none failed
one: a runner that selected a few GPU gates (``-m gpu``, ``-k``, ``--shards``) or whose gates
skipped or ran out of time leaves its arch INCOMPLETE, naming what did not pass. The GPU lane may
be split across runners of one arch, and one shard across runs (``--shard-split=SHARD:K/N``: the
report marks that gate's verdict with its ``part``): the shard counts as passed on an arch when
its parts that passed there cover it, and a missing part leaves the arch INCOMPLETE naming it. An
acceptance shard the fork's own script would not run on the runner's tree (the report's
``excused``) counts as done, as it does for publish.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, cast

import jsonschema

from .errors import NOT_JUDGED, UsageError
from .arch import ARCH_JSON_SCHEMA, Arch, ArchSpec, parse_cuda_arch
from .profile_data import cuda_profiles, get_profile, only_cuda_profile
from .release_manifest import load_manifest

SECTION = "gpu_verification"

#: A report is read whole, so its size is capped: a real one is well under 1 MB (the facts of a
#: release wheel's ~250 libraries included), and a 1 GiB file would take twice that in memory.
MAX_REPORT_BYTES = 32 << 20

_GPU = {"type": ["object", "null"], "properties": {
    "name": {"type": ["string", "null"]}, "compute_capability": {"type": ["string", "null"]},
    "arch": {"type": ["string", "null"]}, "uuid": {"type": ["string", "null"]},
    "visible": {"type": "integer"}}}
#: What this module reads of a --provenance-json report (build_steps.readers.report and
#: harness.plugins.gate_gpus write it); other keys are allowed.
REPORT_SCHEMA = {
    "type": "object",
    "required": ["schema", "gates"],
    "properties": {
        # 2: expected.cuda_arch is Arch.to_json; 1 (reports before 2026-12-05, e.g. docs/gpu_runs/)
        # stored the requested --cuda-arch text there
        "schema": {"enum": [1, 2]},
        "gates": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["verdict"], "properties": {"verdict": {"type": "string"}}}},
        "wheel": {"type": ["object", "null"], "properties": {"sha256": {"type": ["string", "null"]}}},
        "expected": {"type": ["object", "null"], "properties": {"cuda_arch": {"anyOf": [
            {"type": ["string", "null"]}, ARCH_JSON_SCHEMA]}}},
        SECTION: {"type": ["object", "null"], "properties": {
            "host": {"type": "string"},
            "gpus": {"type": "array", "items": _GPU},
            "excused": {"type": "object", "additionalProperties": {"type": "string"}},
            "gates": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["verdict"],
                "properties": {"verdict": {"type": "string"}, "message": {"type": ["string", "null"]},
                               "part": {"type": "string", "pattern": "^[0-9]+/[0-9]+$"},
                               "gpu": _GPU}}}}},
    },
    "if": {"properties": {"schema": {"const": 2}}},
    "then": {"properties": {"expected": {"type": ["object", "null"], "properties": {
        "cuda_arch": {"anyOf": [{"type": "null"}, ARCH_JSON_SCHEMA]}}}}},
}


def report_arch(doc: Mapping[str, Any]) -> Arch | None:
    """The CUDA arch a report records (``expected.cuda_arch``), None when it records none; its
    ``.built`` is the list the wheel was built with (build_steps.readers.report.built_arch).
    A schema-1 report stored the requested text instead: read as a request with nothing overriding it."""
    value = (doc.get("expected") or {}).get("cuda_arch")
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return Arch(requested=parse_cuda_arch(value))
    return Arch.from_json(value)


def sm_name(compute_capability: str | None) -> str | None:
    """``"9.0"`` -> ``"sm_90"``, ``"12.0"`` -> ``"sm_120"``."""
    if not compute_capability or "." not in compute_capability:
        return None
    major, minor = compute_capability.split(".", 1)
    return f"sm_{int(major) * 10 + int(minor)}"


def gpu_identity(preflight: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The GPU the gates' ``gpu(0)`` is, from the cuBLAS/driver preflight's device list."""
    gpus = ((preflight or {}).get("driver") or {}).get("gpus") or []
    if not gpus:
        return None
    g = gpus[0]
    out: dict[str, Any] = {"name": g.get("name"), "compute_capability": g.get("compute_capability"),
           "arch": sm_name(g.get("compute_capability")), "visible": len(gpus)}
    if g.get("uuid"):
        out["uuid"] = g["uuid"]
    return out


# ---- merge -------------------------------------------------------------------------------------

@dataclass
class RunVerdict:
    """One report's GPU gates on one GPU."""
    report: str
    host: str
    gpu: dict[str, Any]
    #: "passed" (>= 1 gpu gate passed, none failed or not judged), "failed", "not judged" (the host
    #: could not judge a gate: a driver below the wheel's floor; none failed), "skipped"
    outcome: str
    detail: str = ""
    #: the GPU gates that passed in this run, and those it excused (shards not on its tree)
    passed: frozenset[str] = frozenset()
    excused: frozenset[str] = frozenset()
    #: gate -> {(K, N)}: the parts of split shards (--shard-split) that passed in this run
    parts: dict[str, set[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class Merged:
    wheel_sha256: str
    archs: list[str]                          # release SASS archs, "sm_80", ...
    runs: list[RunVerdict]                    # RunVerdict of the counted reports
    per_arch: dict[str, list[RunVerdict]] = field(default_factory=dict)   # arch -> [RunVerdict]
    ignored: list[tuple[str, str]] = field(default_factory=list)    # (report, why)
    extra_archs: dict[str, list[RunVerdict]] = field(default_factory=dict)
    #: where the archs came from ("the wheel's fatbins", "--cuda-arch", "the run's report (...)", "the reports")
    archs_from: str = ""
    #: the GPU gates the runs of one arch must have passed between them
    required: tuple[str, ...] = ()

    def missing(self, arch: str) -> list[str]:
        """The required GPU gates no run on ``arch`` passed (or excused); a split shard is passed
        when its parts that passed on ``arch`` cover it (every K of one N), and is named with the
        parts still missing otherwise."""
        done: set[str] = set()
        parts: dict[str, set[tuple[int, int]]] = {}
        for r in self.per_arch.get(arch, []):
            done |= r.passed | r.excused
            for gate, got in r.parts.items():
                parts.setdefault(gate, set()).update(got)
        out: list[str] = []
        for g in self.required:
            if g in done:
                continue
            if g in parts:
                by_n: dict[int, set[int]] = {}
                for k, n in parts[g]:
                    by_n.setdefault(n, set()).add(k)
                if any(len(ks) == n for n, ks in by_n.items()):
                    continue
                n, ks = max(by_n.items(), key=lambda item: len(item[1]) / item[0])
                gaps = ", ".join(f"{k}/{n}" for k in range(1, n + 1) if k not in ks)
                out.append(f"{g} (part {gaps} missing)")
                continue
            out.append(g)
        return out

    def state(self, arch: str) -> str:
        """"verified", "failed", "incomplete" (passed, but not the whole GPU set) or "not verified"."""
        runs = self.per_arch.get(arch, [])
        if any(r.outcome == "failed" for r in runs):
            return "failed"
        if not any(r.outcome in ("passed", NOT_JUDGED) for r in runs):
            return "not verified"
        if not self.missing(arch):
            return "verified"
        # a gate another GPU of the arch judged is not missing; what is left, the host kept from judging
        return NOT_JUDGED if any(r.outcome == NOT_JUDGED for r in runs) else "incomplete"

    def archs_in(self, state: str) -> list[str]:
        return [a for a in self.archs if self.state(a) == state]

    @property
    def unverified(self) -> list[str]:
        return [a for a in self.archs if self.state(a) != "verified"]

    @property
    def failed(self) -> list[str]:
        return self.archs_in("failed")

    @property
    def ok(self) -> bool:
        return not self.unverified


def _read_report(path: Path) -> dict[str, Any]:
    doc = read_json_report(path)
    validate_report(path, doc, REPORT_SCHEMA)
    return cast("dict[str, Any]", doc)  # an object: REPORT_SCHEMA says so


def read_json_report(path: Path) -> Any:
    """A ``--provenance-json`` report's JSON, at most MAX_REPORT_BYTES (a UsageError naming the file
    and the fix otherwise); its shape is the caller's schema's to check (validate_report)."""
    size = path.stat().st_size
    if size > MAX_REPORT_BYTES:
        raise UsageError(f"{path}: {size} bytes, above the {MAX_REPORT_BYTES >> 20} MiB a report may have "
                         "(build_steps.gpu_reports.MAX_REPORT_BYTES); it is not a --provenance-json report: "
                         "remove it from the directory")
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a JSON report ({exc}); remove it or write it again with "
                         "--provenance-json") from None


def validate_report(path: Path, doc: Any, schema: Mapping[str, Any]) -> None:
    """``doc`` (read from ``path``) against ``schema``; a UsageError naming where it is not a report."""
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        raise UsageError(f"{path}: valid JSON but not a harness report (at {where}: {exc.message}); "
                         "remove it or write it again with --provenance-json") from None


def load_reports(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"--merge-reports {directory}: no such directory; pass the directory the GPU "
                         "runners' --provenance-json reports were collected in")
    out = [(path, _read_report(path)) for path in sorted(directory.glob("*.json"))]
    if not out:
        raise UsageError(f"{directory}: no *.json reports in it; each GPU runner writes one with "
                         "pytest -m \"provenance or gpu or cublas\" --wheel=W --provenance-json=DIR/NAME.json")
    return out


def wheel_sass_archs(wheel: Path) -> list[str]:
    """The SASS archs (``sm_80`` ...) of every ELF in ``wheel`` that carries a .nv_fatbin, each
    suffixed variant (sm_100a, sm_100f) counted under its compute capability."""
    from .readers.fatbin import read_fatbin
    from .readers.loadability import elf_members
    from .readers.wheel import extract_wheel
    archs: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="gpu-verify-", dir=os.environ.get("TMPDIR")) as tmp:
        extracted = extract_wheel(wheel, Path(tmp) / "wheel")
        for member in elf_members(extracted.root, extracted.members):
            report = read_fatbin(extracted.root / member)
            if report is not None:
                archs |= report.sass_archs
    return [f"sm_{a}" for a in sorted(archs)]


#: one GPU's two reports: the worse outcome is the GPU's (a failure outranks what the host could not judge)
_RANK = {"skipped": 0, "passed": 1, NOT_JUDGED: 2, "failed": 3}


def _run_verdict(path: Path, doc: Mapping[str, Any]) -> RunVerdict | None:
    section = doc.get(SECTION) or {}
    gates = section.get("gates") or {}
    if not gates:
        return None
    outcomes = [g.get("verdict") for g in gates.values()]
    gpu = next((g["gpu"] for g in gates.values() if g.get("gpu")), None) or {}
    unjudged = [(n, g) for n, g in gates.items() if g.get("verdict") == NOT_JUDGED]
    if "failed" in outcomes:
        outcome = "failed"
        failed = [(n, g) for n, g in gates.items() if g.get("verdict") == "failed"]
        # the counts first: the first failure's message is cut to fit the row
        detail = (f"{len(failed)} GPU gate{'s' if len(failed) > 1 else ''} failed"
                  + (f" ({len(unjudged)} not judged)" if unjudged else "")
                  + f", first {failed[0][0]}: {failed[0][1].get('message', '')}")
    elif unjudged:
        outcome = NOT_JUDGED
        detail = (f"{len(unjudged)} GPU gate{'s' if len(unjudged) > 1 else ''} not judged, first "
                  f"{unjudged[0][0]}: {unjudged[0][1].get('message', '')}")
    elif "passed" in outcomes:
        outcome, detail = "passed", f"{outcomes.count('passed')} GPU gates passed"
    else:
        outcome = "skipped"
        detail = next((g.get("message", "") for g in gates.values()), "")
    parts: dict[str, set[tuple[int, int]]] = {}
    for n, g in gates.items():
        if g.get("verdict") == "passed" and g.get("part"):
            k, _, total = g["part"].partition("/")
            parts.setdefault(n, set()).add((int(k), int(total)))
    return RunVerdict(report=path.name, host=section.get("host", "?"), gpu=gpu, outcome=outcome,
                      detail=detail[:200],
                      passed=frozenset(n for n, g in gates.items() if g.get("verdict") == "passed"
                                       and not g.get("part")),
                      excused=frozenset(section.get("excused") or {}), parts=parts)


def required_gpu_gates(flavor: str | None = None) -> tuple[str, ...]:
    """Every GPU gate of ``flavor``'s release set (its committed manifest); without a flavor,
    those of every CUDA flavor's."""
    flavors = [flavor] if flavor is not None else [p.name for p in cuda_profiles()]
    return tuple(dict.fromkeys(g for f in flavors for g in load_manifest(f).gpu_gates))


def merge(reports: Sequence[tuple[Path, Mapping[str, Any]]], wheel_sha256: str | None = None,
          cuda_arch: str | Mapping[str, Any] | Arch | ArchSpec | None = None, wheel_archs: Sequence[str] | None = None,
          required: Sequence[str] | None = None) -> Merged:
    """``wheel_archs`` (the wheel's own fatbins, wheel_sass_archs) wins over ``cuda_arch``, which
    wins over the arch list the reports say they built (report_arch), then over the release list of
    the reports' flavor. ``cuda_arch``: --cuda-arch's text, a report's ``expected.cuda_arch``
    (Arch.to_json, or a schema-1 report's text), an Arch (its built list) or an ArchSpec.
    ``required``: the GPU gates each arch needs passed (default: that flavor's release set's,
    required_gpu_gates)."""
    ignored: list[tuple[str, str]] = []
    by_sha: dict[str, list[tuple[Path, Mapping[str, Any]]]] = {}
    for path, doc in reports:
        sha = ((doc.get("wheel") or {}).get("sha256"))
        if not sha:
            ignored.append((path.name, "no wheel sha256 in the report (written by an older harness?): "
                            "it cannot be tied to a wheel"))
            continue
        by_sha.setdefault(sha, []).append((path, doc))
    if wheel_sha256 is None:
        if len(by_sha) > 1:
            listing = "; ".join(f"{sha[:12]}: {', '.join(p.name for p, _ in docs)}" for sha, docs in by_sha.items())
            raise UsageError(f"the reports are of {len(by_sha)} different wheels ({listing}): pass "
                             "--wheel=W to count only that wheel's, or keep one wheel's reports per directory")
        if not by_sha:
            raise UsageError("no report names its wheel's sha256: nothing can be merged")
        wheel_sha256 = next(iter(by_sha))
    for sha, docs in by_sha.items():
        if sha != wheel_sha256:
            ignored += [(p.name, f"another wheel (sha256 {sha[:12]}…)") for p, _ in docs]
    mine = by_sha.get(wheel_sha256, [])
    flavors: set[str] = {d["profile"] for _, d in mine if d.get("profile") not in (None, "")}
    if len(flavors) > 1:
        raise UsageError(f"the reports of wheel {wheel_sha256[:12]} name different flavors "
                         f"({', '.join(sorted(flavors))}): one wheel is built for one flavor; keep its reports only")
    profile = get_profile(flavors.pop()) if flavors else None

    if wheel_archs:
        archs, source = list(wheel_archs), "the wheel's fatbins"
    elif isinstance(cuda_arch, str):
        archs, source = [f"sm_{a}" for a in parse_cuda_arch(cuda_arch).sass], "--cuda-arch"
    elif cuda_arch is not None:
        spec = _built(cuda_arch)
        archs, source = [f"sm_{a}" for a in spec.sass], f"the run's report ({spec.text or 'no arch'})"
    else:
        wanted: dict[ArchSpec, list[str]] = {}
        for path, doc in mine:
            try:
                arch = report_arch(doc)
            except UsageError as exc:
                raise UsageError(f"{path}: {exc}") from None
            if arch is not None and (arch.built.sass or arch.built.ptx):
                wanted.setdefault(arch.built, []).append(path.name)
        if len(wanted) > 1:
            listing = "; ".join(f"{spec.text or spec.sass}: {', '.join(names)}" for spec, names in wanted.items())
            raise UsageError(f"the reports say their wheel was built for different arch lists ({listing}): "
                             "pass --wheel=W (its fatbins say) or --cuda-arch")
        spec = next(iter(wanted)) if wanted else (
            profile or only_cuda_profile("the reports name no arch list and no flavor")).release_arch
        archs, source = [f"sm_{a}" for a in spec.sass], "the reports (pass --wheel to read the wheel)"
    merged = Merged(wheel_sha256=wheel_sha256, archs=archs, runs=[], ignored=ignored, archs_from=source,
                    required=tuple(required if required is not None else
                                   required_gpu_gates(profile.name if profile is not None else None)))
    seen: dict[tuple[str, object], RunVerdict] = {}   # (host, GPU) -> RunVerdict counted
    for path, doc in mine:
        run = _run_verdict(path, doc)
        if run is None:
            merged.ignored.append((path.name, "no GPU gate ran in this run (static report only)"))
            continue
        key = (run.host, run.gpu.get("uuid") or (run.gpu.get("name"), run.gpu.get("compute_capability")))
        if run.gpu and key in seen:
            first = seen[key]
            # One GPU, two reports: counted once; a failure in either is the GPU's verdict.
            if _RANK[run.outcome] > _RANK[first.outcome] and run.outcome != "passed":
                first.outcome, first.detail = run.outcome, f"{run.report}: {run.detail}"
            elif run.outcome == "passed" and first.outcome == "skipped":
                first.outcome, first.detail = "passed", run.detail
            # ... and the GPU gates either passed count (a GPU set run in parts on one GPU)
            first.passed, first.excused = first.passed | run.passed, first.excused | run.excused
            for gate, got in run.parts.items():
                first.parts.setdefault(gate, set()).update(got)
            merged.ignored.append((path.name, f"the same GPU as {first.report} (host {run.host}, GPU "
                                   f"{run.gpu.get('uuid') or run.gpu.get('name')}): counted once"))
            continue
        if run.gpu:
            seen[key] = run
        merged.runs.append(run)
        arch = run.gpu.get("arch")
        if arch is None:
            merged.ignored.append((path.name, "no GPU on that runner (every GPU gate skipped)"
                                   if run.outcome == "skipped" else
                                   f"GPU gates {run.outcome} but the report names no GPU: {run.detail}"))
            continue
        if arch in archs:
            merged.per_arch.setdefault(arch, []).append(run)
        else:
            merged.extra_archs.setdefault(arch, []).append(run)
    return merged


def _built(cuda_arch: Mapping[str, Any] | Arch | ArchSpec) -> ArchSpec:
    """The list built, of an Arch, an ArchSpec or a report's ``expected.cuda_arch``."""
    if isinstance(cuda_arch, ArchSpec):
        return cuda_arch
    if isinstance(cuda_arch, Arch):
        return cuda_arch.built
    # a mapping: report_arch returns None only for a missing or empty text, and Arch.from_json
    # raises a UsageError for a mapping that is no arch
    return cast(Arch, report_arch({"expected": {"cuda_arch": cuda_arch}})).built


def summary_lines(m: Merged) -> list[str]:
    lines = [f"GPU verification of wheel sha256 {m.wheel_sha256} ({len(m.runs)} GPU runs merged; "
             f"release archs from {m.archs_from or 'the reports'})"]
    for arch in m.archs:
        runs = m.per_arch.get(arch, [])
        if not runs:
            lines.append(f"  {arch:<7} NOT VERIFIED: no GPU of this arch ran the GPU gates")
            continue
        missing, state = m.missing(arch), m.state(arch)
        state = state if state == "verified" else state.upper()
        who = "; ".join(f"{r.gpu.get('name')} on {r.host} ({r.report}): {r.outcome}"
                        + (f" - {r.detail}" if r.outcome != "passed" else "") for r in runs)
        lines.append(f"  {arch:<7} {state}: {who}")
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            lines.append(f"          {len(missing)} of the release set's {len(m.required)} GPU gates did not "
                         f"pass on {arch}: {shown}; run them there (pytest -m \"gpu or cublas\" --wheel=W "
                         "--mxnet-src=<its fork tree>: the whole GPU set, no -k, --shards or --lanes)")
    for arch, runs in sorted(m.extra_archs.items()):
        lines.append(f"  {arch:<7} not a release arch of this wheel: "
                     + "; ".join(f"{r.gpu.get('name')} ({r.report}): {r.outcome}" for r in runs))
    for name, why in m.ignored:
        lines.append(f"  ignored {name}: {why}")
    if m.ok:
        lines.append(f"strict verdict: PASS - every release arch ({', '.join(m.archs)}) ran MXNet from this wheel on a GPU")
    else:
        parts = []
        if m.failed:
            parts.append(f"GPU gates failed on {', '.join(m.failed)}")
        unjudged = m.archs_in(NOT_JUDGED)
        if unjudged:
            parts.append(f"the host could not judge the GPU gates on {', '.join(unjudged)}")
        incomplete = m.archs_in("incomplete")
        if incomplete:
            parts.append(f"the GPU gates did not all pass on {', '.join(incomplete)}")
        missing = m.archs_in("not verified")
        if missing:
            parts.append(f"no GPU verified {', '.join(missing)}")
        lines.append("strict verdict: FAIL - " + "; ".join(parts))
    return lines
