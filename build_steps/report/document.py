"""The run's report document: the JSON report's sections beyond the static facts (the wheel's
identity, the GPU gates with their GPU, the build's compiler cache and times, the review section:
every gate's verdict and meaning, the steps' timeline, the development overrides, the verdict's
scope against the flavor's release set), and the review page written from it.

Plain functions of the run record (build_steps.report.record.RunRecord: the ledger's entries, the chain's
typed products, the pin, the options), no pytest object inside: the end of the run (harness.plugins.finish)
calls them, and a selftest calls them on a record it builds.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pathlib import Path

from build_steps import gpu_reports
from build_steps.configure import ConfigureResult
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.pinning import sha256_of
from build_steps.readers.report import provenance_document, summary_lines

from . import review_page

from build_steps.build_chain import CHAIN, step_seconds

from ..errors import INTERRUPTED, REFUSED
from ..release_manifest import ReleaseSet
from .record import ChainProducts, HostFacts, RunRecord

if TYPE_CHECKING:
    from build_steps.pinning import WheelPin

# the checkout (build_steps/report/document.py is two folders down): the gate modules are its tests/
HARNESS_ROOT = Path(__file__).resolve().parents[2]

#: The chain's steps the timeline shows, in order, with the summary's labels (all but the source check).
_TIMED_STEPS = tuple((step.record, step.label) for step in CHAIN[1:])


def _timeline(chain: ChainProducts) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for key, label in _TIMED_STEPS:
        end = chain.ended.get(key)
        if end is not None:
            steps.append({"name": label, "seconds": 0, "note": "INTERRUPTED" if end.interrupted else "FAILED"})
            continue
        seconds = getattr(chain.product(key), "seconds", None)  # every timed step's product has it
        if isinstance(seconds, (int, float)):
            note = "no work to do" if chain.compile is not None and key == "compile" and chain.compile.no_work else ""
            steps.append({"name": label, "seconds": seconds, "note": note})
    # The compile's time data (build_steps.readers.ninja_log.build_time), when the compile step
    # measured it: a record of an older build has none and the page then says "not measured";
    # cpu_seconds is None when the compiles ran under sccache's server.
    measured = (chain.compile.build_time if chain.compile is not None else None) or {}
    slowest = [s for s in measured.get("slowest_steps") or () if isinstance(s, dict)]
    cpu = measured.get("cpu_seconds")
    command = measured.get("command_seconds")
    return {"steps": steps, "slowest_steps": slowest,
            "cpu_seconds": cpu if isinstance(cpu, (int, float)) else None,
            "command_seconds": command if isinstance(command, (int, float)) else None,
            "commands": measured.get("commands")}


def _verdict(rec: RunRecord, rset: ReleaseSet | None, gates: list[dict[str, Any]]) -> dict[str, Any]:
    # A skip fails a -m release run (harness.plugins.gates turned it into "failed" already); elsewhere it
    # is shown, not counted against the verdict.
    return review_page.verdict(gates, rset.gates if rset is not None else None,
                               rec.options.profile.name,
                               interrupted=rec.exitstatus == INTERRUPTED,
                               selection=f"-m {rec.selection!r}" if rec.selection else None)


def _first_sentence(doc: str | None) -> str:
    para = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    m = re.match(r"(.+?\.)(\s|$)", para)
    line = m.group(1) if m else para
    return line if len(line) <= 200 else line[:200].rsplit(" ", 1)[0] + " …"


def gate_meanings(nodeids: Iterable[str], root: Path = HARNESS_ROOT) -> dict[str, str]:
    """nodeid -> the gate's one-line meaning: its docstring's first sentence, else its module's
    (read from the source with ast: the page of an xdist run's controller, which collects
    nothing, gets the same words)."""
    by_file: dict[str, dict[str, str]] = {}
    for n in nodeids:
        path, _, rest = n.partition("::")
        by_file.setdefault(path, {})[n] = rest.split("[", 1)[0].split("::")[-1]
    out: dict[str, str] = {}
    for path, funcs in by_file.items():
        try:
            tree = ast.parse((root / path).read_text())
        except (OSError, SyntaxError, ValueError):
            continue
        docs = {node.name: ast.get_docstring(node) for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        module = _first_sentence(ast.get_docstring(tree))
        for n, func in funcs.items():
            out[n] = _first_sentence(docs.get(func)) or module
    return out


def _compiler_versions(conf: ConfigureResult) -> dict[str, str]:
    """The compilers CMake used and its version, from the configure step's product (its File API
    facts: ConfigureResult.compilers, computed once there; nothing here reads the build dir)."""
    out: dict[str, str] = {}
    for lang, key in (("CUDA", "nvcc"), ("CXX", "c++")):
        used = conf.compilers.get(lang) or {}  # the File API's toolchains-v1 entry: {id, version, path}
        if used.get("version"):
            out[key] = f"{used.get('id') or ''} {used['version']}".strip()
    if conf.cmake_version:
        out["cmake"] = conf.cmake_version
    return out


def _cuda_wheels(wheels: Path) -> list[str]:
    names = sorted({d.name.removesuffix(".dist-info") for d in [*wheels.glob("*.dist-info"), *wheels.glob("*/*.dist-info")]
                    if d.name.lower().startswith("nvidia")})
    return [n.replace("-", " ", 1) for n in names]  # "nvidia_cublas 13.1.0.3"


def _provenance(chain: ChainProducts, host: HostFacts | None) -> dict[str, Any]:
    source, conf, cuda = chain.source, chain.configure, chain.cuda_root
    if conf is None and source is None:
        return {}  # an audit: nothing was built on this host
    out: dict[str, Any] = {
        "host": host.name if host else None, "os": host.os if host else None,
        "python": host.python if host else None,
        "source": str(source.root) if source else None, "commit": source.commit if source else None,
        "branch": source.branch if source else None,
        # the sample tree (selftest/sample_mxnet) names its CMake project so
        "sample": conf is not None and conf.cache.get("CMAKE_PROJECT_NAME") == "mxnet_sample"}
    if conf is not None:
        out.update(_compiler_versions(conf))
    if cuda is not None:
        out["cuda_root"] = str(cuda.root)
        out["cuda_wheels"] = _cuda_wheels(cuda.wheels_dir)
    return {k: v for k, v in out.items() if v not in (None, "", [])} | {"sample": out["sample"]}


def _run_timeline(rec: RunRecord, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole run's wall time, split into what is known: the build steps, the rest of the gates'
    setup (CUDA wheels, throwaway venv, wheel extraction), the gates' own bodies, and the rest
    (collection, teardown, reporting)."""
    clock = rec.clock
    if clock is None:
        return {}
    total = rec.ended - clock.start
    built = sum(s["seconds"] for s in steps)
    setup, call = clock.setup, clock.call
    phases = [*({"name": s["name"], "seconds": s["seconds"]} for s in steps),
              # the gates' fixture setup beyond the build steps: the venv and its wheels, extraction
              {"name": "other setup (venv, extraction)", "seconds": max(setup - built, 0.0)},
              {"name": "gate bodies", "seconds": call},
              {"name": "collection, teardown, reporting", "seconds": max(total - setup - call, 0.0)}]
    note = ""
    if rec.xdist:
        note = "setup and gate times are summed over the xdist workers, so they may add up to more than the wall time"
    return {"total": total, "phases": [p for p in phases if p["seconds"] > 0.05], "note": note}


def review_section(rec: RunRecord, verdicts: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON report's ``review`` section: what the page shows beyond the static facts.

    The gates are the ledger's (the reporting process's, at the end of the session), or
    ``verdicts`` (nodeid -> verdict) where the ledger is not the whole story (the publish row)."""
    options = rec.options
    if verdicts is None:
        gates: list[dict[str, Any]] = [{"nodeid": n, "verdict": e.verdict, "why": e.why, "markers": list(e.markers)}
                 for n, e in sorted(rec.entries.items()) if "release" in e.markers]
    else:
        gates = [{"nodeid": n, "verdict": v, "why": "", "markers": []} for n, v in sorted(verdicts.items())]
    broken = development_option_promises(options) + broken_promises(options)
    development = bool(broken or options.allow_dirty)
    rset = rec.release_set
    seen = {g["nodeid"] for g in gates if g["verdict"] != "not run"}
    collected = rec.collected
    not_run: list[dict[str, Any]] = [{"nodeid": n, "markers": collected.get(n, []), "group": review_page.group_of(n, collected.get(n))}
               for n in (rset.gates if rset is not None else ()) if n not in seen]
    meanings = gate_meanings([*(g["nodeid"] for g in gates), *(g["nodeid"] for g in not_run)])
    for g in [*gates, *not_run]:
        g["meaning"] = meanings.get(g["nodeid"], "")
    timeline = _timeline(rec.chain)
    timeline["run"] = _run_timeline(rec, timeline["steps"])
    conf, source = rec.chain.configure, rec.chain.source
    return {review_page.SECTION: {
        "verdict": _verdict(rec, rset, gates),
        "gates": gates,
        "not_run": not_run,
        "provenance": _provenance(rec.chain, rec.host),
        "configure_notes": list(conf.notes) if conf is not None else [],
        "timeline": timeline,
        "overrides": {"cmake_defines": dict(options.cmake_defines),
                      "broken": broken,
                      "development_options": list(options.development_options),
                      "host_workarounds": options.host_workarounds,
                      "allow_dirty": options.allow_dirty, "development": development},
        "warnings": list(source.submodule_warnings) if source is not None else [],
    }}


def _logs_dir(chain: ChainProducts) -> Path | None:
    """The build's harness-logs/ (where the configure step wrote its log), None without a build."""
    return chain.configure.log.parent if chain.configure is not None else None


def destinations(rec: RunRecord) -> list[Path]:
    """Where the page goes: --review-page, else the build's harness-logs/review.html and beside
    the --provenance-json report (``report.html`` for ``report.json``)."""
    if rec.review_page is not None:
        return [rec.review_page]
    out = []
    logs = _logs_dir(rec.chain)
    if logs is not None:
        out.append(logs / "review.html")
    json_path = rec.options.provenance_json
    if json_path is not None:
        out.append(Path(json_path).with_suffix(".html"))
    return out


def wants_page(rec: RunRecord) -> bool:
    """Whether this run writes a page (the report document is built only then or for
    --provenance-json): a built wheel, --review-page or --provenance-json."""
    return bool(destinations(rec))


def merged_gpu_runs(rec: RunRecord, doc: dict[str, Any]) -> gpu_reports.Merged | None:
    """This run's own GPU gates plus --gpu-reports, merged per arch (None: neither exists)."""
    sha = (doc.get("wheel") or {}).get("sha256")
    arch = gpu_reports.report_arch(doc)  # the built arch, as data (never the requested text)
    reports = [(Path("this run"), doc)] if (doc.get(gpu_reports.SECTION) or {}).get("gates") else []
    if rec.gpu_reports is not None:
        reports = [*gpu_reports.load_reports(rec.gpu_reports), *reports]
    if not reports or not sha:
        return None
    return gpu_reports.merge(reports, sha, arch)


def publish_page(rec: RunRecord, dest: Path, verdicts: dict[str, str]) -> Path:
    """The page the publish row attaches to the GitHub release: this run's facts and every other
    gate's verdict (all passed, or there is no publish), written before the release is made."""
    pin = rec.pin
    if pin is None:
        raise ValueError("publish_page: the run pinned no wheel")
    doc = provenance_document(rec.audit, {}, rec.options)
    doc.update(review_section(rec, verdicts))
    doc["wheel"] = wheel_section(pin)
    return review_page.write_page(dest, doc, Path(pin.path), merged_gpu_runs(rec, doc))


def wheel_section(pin: WheelPin) -> dict[str, Any]:
    """The report's ``wheel``: the bytes the gates judged (harness.plugins.wheel_pin), hashed when pinned, so
    the report names one exact file."""
    return {"filename": Path(pin.source).name, "file": pin.source, "sha256": pin.sha256, "size": pin.size}


def _unpinned_wheel(rec: RunRecord) -> Path | None:
    """The wheel of a run that pinned none (its GPU gates' wheel, --wheel, the audit's, the placed one)."""
    for gpu_run in rec.gpu_runs.values():
        if gpu_run.get("wheel"):
            return Path(gpu_run["wheel"])
    if rec.mode == "audit":
        return rec.options.wheel
    if rec.audit is not None and rec.audit.wheel_file:
        return Path(rec.audit.wheel_file)
    return Path(rec.placed_wheel) if rec.placed_wheel else None


def _part_of(nodeid: str, parts: Mapping[str, str]) -> dict[str, str]:
    """{"part": "K/N"} for a gate that ran one part of a split shard (tools.gpu_verify adds parts up)."""
    return next(({"part": p} for suffix, p in parts.items() if nodeid.endswith(suffix)), {})


def extra_sections(rec: RunRecord) -> dict[str, Any]:
    """The JSON report's ``wheel``, ``gpu_verification`` and ``build`` sections."""
    out: dict[str, Any] = {}
    if rec.pin is not None:
        out["wheel"] = wheel_section(rec.pin)  # never the user's path again, nor a second hash
    elif (wheel := _unpinned_wheel(rec)) is not None and wheel.is_file():
        out["wheel"] = {"filename": wheel.name, "sha256": sha256_of(wheel)}
    runs = rec.gpu_runs
    gpus = {json.dumps(r["gpu"], sort_keys=True): r["gpu"] for r in runs.values() if r.get("gpu")}
    out[gpu_reports.SECTION] = {
        "host": rec.host.name if rec.host else None,
        "gpus": list(gpus.values()),
        "gates": {nodeid: {**{k: v for k, v in r.items() if k != "wheel"}, **_part_of(nodeid, rec.split_parts)}
                  for nodeid, r in sorted(runs.items())},
        # GPU shards the fork's own script would not run on this tree: tools.gpu_verify counts them done
        "excused": dict(rec.excused_gpu),
    }
    compiled, conf = rec.chain.compile, rec.chain.configure
    build: dict[str, Any] = {}
    if compiled is not None and compiled.launcher:
        build["compiler_launcher"] = compiled.launcher
    if compiled is not None and compiled.build_time:
        build["compile_time"] = {"wall_seconds": compiled.seconds, **compiled.build_time}
    # the toolchain is the configure step's product (computed once there), the rest the compile's
    if conf is not None and conf.toolchain:
        build["toolchain"] = conf.toolchain
    if compiled is not None and compiled.reproducible:
        build["reproducible"] = compiled.reproducible
    # who the tree's and the wheel's code ran as, measured in a sandbox (not the code path assumed)
    if rec.host is not None and rec.host.sandbox is not None:
        out["sandbox"] = rec.host.sandbox
    steps = step_seconds(rec.chain.records())
    if steps:
        build["step_seconds"] = steps
    if build:
        out["build"] = build
    return out


# --------------------------------------------------------------------------------------------
# The end of the run's products, each a function of the record
# --------------------------------------------------------------------------------------------
def provenance_lines(rec: RunRecord) -> list[str]:
    """The summary's provenance report (empty when no provenance or GPU gate reported)."""
    if not rec.provenance_verdicts and not rec.gpu_runs:
        return []
    return ["", "Provenance report:"] + ["  " + ln for ln in summary_lines(rec.audit, rec.provenance_verdicts)]


def wants_document(rec: RunRecord) -> bool:
    """Whether the run has a report document: a provenance or GPU gate reported, and the run writes
    the JSON report or a page."""
    return bool(rec.provenance_verdicts or rec.gpu_runs) and (
        rec.options.provenance_json is not None or wants_page(rec))


def report_document(rec: RunRecord) -> dict[str, Any] | None:
    """The JSON report (``--provenance-json``, and what the page renders): the static facts, the
    wheel, the GPU gates, the build, the review section (None: wants_document says no). The host's
    facts are the record's (HostFacts.measure, by the caller)."""
    if not wants_document(rec):
        return None
    doc = provenance_document(rec.audit, rec.provenance_verdicts, rec.options)
    doc.update(extra_sections(rec))
    doc.update(review_section(rec))
    return doc


@dataclass(frozen=True)
class Page:
    """The review page to write: where, its document, and the wheel its parts are read from."""
    dests: tuple[Path, ...]
    doc: dict[str, Any]
    wheel: Path | None
    merged: gpu_reports.Merged | None


def page_of(rec: RunRecord, doc: dict[str, Any] | None) -> Page | None:
    """The review page of the report document ``doc``, with where the built wheel now lies and what
    this run wrote; None when the run writes none (no document, a usage error, --co, nowhere to go)."""
    if doc is None or rec.exitstatus == REFUSED or rec.collect_only:
        return None
    dests = destinations(rec)
    if not dests:
        return None
    pin = rec.pin
    wheel = Path(pin.path) if pin is not None and Path(pin.path).is_file() else None
    section = dict(doc.get(review_page.SECTION) or {})
    if rec.placed_wheel:
        section["wheel_location"] = rec.placed_wheel
    # The footer names only what this run wrote: the pages, the JSON report, the step logs.
    json_path = rec.options.provenance_json
    logs = _logs_dir(rec.chain) or Path("/nonexistent")
    section["written"] = [str(p) for p in [*dests, json_path, logs / "configure.log", logs / "compile.log"]
                          if p is not None and (p in dests or Path(p).is_file())]
    page_doc = {**doc, review_page.SECTION: section}
    return Page(dests=tuple(dests), doc=page_doc, wheel=wheel, merged=merged_gpu_runs(rec, page_doc))


def write_pages(page: Page) -> Iterator[str]:
    """Writes the page to each of its destinations, a summary line after each (a full disk is
    build_steps.atomic's HarnessError, raised after the lines of the pages already written)."""
    for dest in page.dests:
        review_page.write_page(dest, page.doc, page.wheel, page.merged)
        yield f"review page: {dest}"


def driver_stub_lines(rec: RunRecord) -> list[str]:
    """Said when the CPU-side runtime gates ran with the stand-in libcuda.so.1 (harness.plugins.runtime)."""
    if rec.driver_stub is None:
        return []
    return ["", f"driver stub: this host has no NVIDIA driver ({rec.driver_stub}); the "
            "CPU-side runtime gates (OpenCV, ONNX, Features) ran with a stand-in "
            "libcuda.so.1 preloaded into their probes only. It answers every driver "
            "call with 'no device': no GPU gate ran on it."]
