"""The run's report document: the JSON report's sections beyond the static facts (the wheel's
identity, the GPU gates with their GPU, the build's compiler cache and times, the review section:
every gate's verdict and meaning, the steps' timeline, the development overrides, the verdict's
scope against the flavor's release set), and the review page written from it.

Plain functions of the run's state (harness.state.HarnessRun) and the chain's records; the end of
the run (harness.finish) and the publish gate call them.
"""
from __future__ import annotations

import ast
import json
import platform
import re
import socket
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest
from pathlib import Path

from build_steps import gpu_reports, review_page, sandbox
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.pinning import sha256_of
from build_steps.readers.report import provenance_document

from .release_scope import ReleaseSet, release_set_of
from .shard_plan import inapplicable_shard_gates, split_parts
from .state import HarnessRun
from build_steps.build_chain import CHAIN, chain_records, step_seconds

if TYPE_CHECKING:
    from build_steps.pinning import WheelPin
    from build_steps.readers.audit import Audit

HARNESS_ROOT = Path(__file__).resolve().parent.parent

#: The chain's steps the timeline shows, in order, with the summary's labels (all but the source check).
_TIMED_STEPS = tuple((step.record, step.label) for step in CHAIN[1:])


def _timeline(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    compile_result: dict[str, Any] = {}
    for key, label in _TIMED_STEPS:
        rec = records.get(key) or {}
        if rec.get("failed"):
            steps.append({"name": label, "seconds": 0, "note": "INTERRUPTED" if rec.get("interrupted") else "FAILED"})
            continue
        result = rec.get("result") or {}
        if key == "compile":
            compile_result = result
        if isinstance(result.get("seconds"), (int, float)):
            note = "no work to do" if result.get("no_work") else ""
            steps.append({"name": label, "seconds": result["seconds"], "note": note})
    # The compile record's time data (build_steps.readers.ninja_log.build_time), when the compile
    # step measured it: read by key, since a record of an older build has none and the page then
    # says "not measured"; cpu_seconds is None when the compiles ran under sccache's server.
    measured = compile_result.get("build_time") or {}
    slowest = [s for s in measured.get("slowest_steps") or () if isinstance(s, dict)]
    cpu = measured.get("cpu_seconds")
    command = measured.get("command_seconds")
    return {"steps": steps, "slowest_steps": slowest,
            "cpu_seconds": cpu if isinstance(cpu, (int, float)) else None,
            "command_seconds": command if isinstance(command, (int, float)) else None,
            "commands": measured.get("commands")}


def _verdict(run: HarnessRun, rset: ReleaseSet, gates: list[dict[str, Any]], exitstatus: int | None) -> dict[str, Any]:
    # A skip fails a -m release run (harness.gates turned it into "failed" already); elsewhere it
    # is shown, not counted against the verdict.
    markexpr = run.config.getoption("markexpr", None) or None
    return review_page.verdict(gates, rset.gates if rset is not None else None,
                               run.options.profile.name,
                               interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
                               selection=f"-m {markexpr!r}" if markexpr else None)


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


def _compiler_versions(conf: dict[str, Any]) -> dict[str, str]:
    """The compilers CMake used and its version, from the configure step's product (its File API
    facts: ConfigureResult.compilers, computed once there; nothing here reads the build dir)."""
    out: dict[str, str] = {}
    compilers = conf.get("compilers") or {}
    for lang, key in (("CUDA", "nvcc"), ("CXX", "c++")):
        used = compilers.get(lang) or {}
        if used.get("version"):
            out[key] = f"{used.get('id') or ''} {used['version']}".strip()
    if conf.get("cmake_version"):
        out["cmake"] = conf["cmake_version"]
    return out


def _cuda_wheels(cuda: dict[str, Any]) -> list[str]:
    wheels = Path(cuda.get("wheels_dir") or "/nonexistent")
    names = sorted({d.name.removesuffix(".dist-info") for d in [*wheels.glob("*.dist-info"), *wheels.glob("*/*.dist-info")]
                    if d.name.lower().startswith("nvidia")})
    return [n.replace("-", " ", 1) for n in names]  # "nvidia_cublas 13.1.0.3"


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.platform()
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)', text, re.M)
    return m.group(1) if m else platform.platform()


def _provenance(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    source = (records.get("source") or {}).get("result") or {}
    conf = (records.get("configure") or {}).get("result") or {}
    cuda = (records.get("cuda_root") or {}).get("result") or {}
    cache = conf.get("cache") or {}
    if not conf and not source:
        return {}  # an audit: nothing was built on this host
    out = {"host": socket.gethostname(), "os": _os_name(), "python": platform.python_version(),
           "source": source.get("root"), "commit": source.get("commit"), "branch": source.get("branch"),
           # the sample tree (selftest/sample_mxnet) names its CMake project so
           "sample": cache.get("CMAKE_PROJECT_NAME") == "mxnet_sample"}
    out.update(_compiler_versions(conf))
    if cuda:
        out["cuda_root"] = cuda.get("root")
        out["cuda_wheels"] = _cuda_wheels(cuda)
    return {k: v for k, v in out.items() if v not in (None, "", [])} | {"sample": out["sample"]}


def _run_timeline(run: HarnessRun, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole run's wall time, split into what is known: the build steps, the rest of the gates'
    setup (CUDA wheels, throwaway venv, wheel extraction), the gates' own bodies, and the rest
    (collection, teardown, reporting)."""
    clock = run.clock
    if clock is None:
        return {}
    total = time.monotonic() - clock.start
    built = sum(s["seconds"] for s in steps)
    setup, call = clock.setup, clock.call
    phases = [*({"name": s["name"], "seconds": s["seconds"]} for s in steps),
              # the gates' fixture setup beyond the build steps: the venv and its wheels, extraction
              {"name": "other setup (venv, extraction)", "seconds": max(setup - built, 0.0)},
              {"name": "gate bodies", "seconds": call},
              {"name": "collection, teardown, reporting", "seconds": max(total - setup - call, 0.0)}]
    note = ""
    if getattr(run.config.option, "numprocesses", None):
        note = "setup and gate times are summed over the xdist workers, so they may add up to more than the wall time"
    return {"total": total, "phases": [p for p in phases if p["seconds"] > 0.05], "note": note}


def review_section(run: HarnessRun, records: dict[str, dict[str, Any]], exitstatus: int | None = None,
                   verdicts: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON report's ``review`` section: what the page shows beyond the static facts.

    The gates are the ledger's (the reporting process's, at the end of the session), or
    ``verdicts`` (nodeid -> verdict) where the ledger is not the whole story yet (the publish gate)."""
    options = run.options
    if verdicts is None:
        gates: list[dict[str, Any]] = [{"nodeid": n, "verdict": e.verdict, "why": e.why, "markers": list(e.markers)}
                 for n, e in sorted(run.ledger.entries.items()) if "release" in e.markers]
    else:
        gates = [{"nodeid": n, "verdict": v, "why": "", "markers": []} for n, v in sorted(verdicts.items())]
    source = (records.get("source") or {}).get("result") or {}
    broken = development_option_promises(options) + broken_promises(options)
    development = bool(broken or options.allow_dirty)
    rset = release_set_of(run)
    seen = {g["nodeid"] for g in gates if g["verdict"] != "not run"}
    collected = run.collected
    not_run: list[dict[str, Any]] = [{"nodeid": n, "markers": collected.get(n, []), "group": review_page.group_of(n, collected.get(n))}
               for n in (rset.gates if rset is not None else ()) if n not in seen]
    meanings = gate_meanings([*(g["nodeid"] for g in gates), *(g["nodeid"] for g in not_run)])
    for g in [*gates, *not_run]:
        g["meaning"] = meanings.get(g["nodeid"], "")
    timeline = _timeline(records)
    timeline["run"] = _run_timeline(run, timeline["steps"])
    conf = (records.get("configure") or {}).get("result") or {}
    return {review_page.SECTION: {
        "verdict": _verdict(run, rset, gates, exitstatus),
        "gates": gates,
        "not_run": not_run,
        "provenance": _provenance(records),
        "configure_notes": list(conf.get("notes") or ()),
        "timeline": timeline,
        "overrides": {"cmake_defines": dict(options.cmake_defines),
                      "broken": broken,
                      "development_options": list(options.development_options),
                      "host_workarounds": options.host_workarounds,
                      "allow_dirty": options.allow_dirty, "development": development},
        "warnings": list(source.get("submodule_warnings") or ()),
    }}


def destinations(run: HarnessRun, records: dict[str, dict[str, Any]]) -> list[Path]:
    """Where the page goes: --review-page, else the build's harness-logs/review.html and beside
    the --provenance-json report (``report.html`` for ``report.json``)."""
    explicit = run.config.getoption("review_page", None)
    if explicit is not None:
        return [Path(explicit)]
    out = []
    log = ((records.get("configure") or {}).get("result") or {}).get("log")
    if log:
        out.append(Path(log).parent / "review.html")
    json_path = run.options.provenance_json
    if json_path is not None:
        out.append(Path(json_path).with_suffix(".html"))
    return out


def wants_page(run: HarnessRun, records: dict[str, dict[str, Any]]) -> bool:
    """Whether this run writes a page (harness.wheel_facts builds the report document only then or for
    --provenance-json): a built wheel, --review-page or --provenance-json."""
    return bool(destinations(run, records))


def merged_gpu_runs(run: HarnessRun, doc: dict[str, Any]) -> gpu_reports.Merged | None:
    """This run's own GPU gates plus --gpu-reports, merged per arch (None: neither exists)."""
    sha = (doc.get("wheel") or {}).get("sha256")
    arch = gpu_reports.report_arch(doc)  # the built arch, as data (never the requested text)
    reports = [(Path("this run"), doc)] if (doc.get(gpu_reports.SECTION) or {}).get("gates") else []
    directory = run.config.getoption("gpu_reports", None)
    if directory is not None:
        reports = [*gpu_reports.load_reports(directory), *reports]
    if not reports or not sha:
        return None
    return gpu_reports.merge(reports, sha, arch)


def publish_page(run: HarnessRun, dest: Path, audit: Audit | None, verdicts: dict[str, str], pin: WheelPin) -> Path:
    """The page the publish gate attaches to the GitHub release: this run's facts and every other
    gate's verdict (all passed, or there is no publish), written before the release is made."""
    doc = provenance_document(audit, {}, run.options)
    # read here, in the gate: the end of the run has not read the records yet
    doc.update(review_section(run, chain_records(run.shared), None, verdicts))
    doc["wheel"] = wheel_section(pin)
    return review_page.write_page(dest, doc, Path(pin.path), merged_gpu_runs(run, doc))


def wheel_section(pin: WheelPin) -> dict[str, Any]:
    """The report's ``wheel``: the bytes the gates judged (harness.wheel_pin), hashed when pinned, so
    the report names one exact file."""
    return {"filename": Path(pin.source).name, "file": pin.source, "sha256": pin.sha256, "size": pin.size}


def _unpinned_wheel(run: HarnessRun, facts: Audit | None) -> Path | None:
    """The wheel of a run that pinned none (its GPU gates' wheel, --wheel, the audit's, the placed one)."""
    for gpu_run in run.gpu_runs.values():
        if gpu_run.get("wheel"):
            return Path(gpu_run["wheel"])
    if run.mode == "audit":
        return run.options.wheel
    if facts is not None and getattr(facts, "wheel_file", None):
        return Path(facts.wheel_file)
    return Path(run.placed_wheel) if run.placed_wheel else None


def _part_of(nodeid: str, parts: dict[str, str]) -> dict[str, str]:
    """{"part": "K/N"} for a gate that ran one part of a split shard (tools.gpu_verify adds parts up)."""
    return next(({"part": p} for suffix, p in parts.items() if nodeid.endswith(suffix)), {})


def extra_sections(run: HarnessRun, facts: Audit | None, records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The JSON report's ``wheel``, ``gpu_verification`` and ``build`` sections."""
    out: dict[str, Any] = {}
    if run.pin is not None:
        out["wheel"] = wheel_section(run.pin)  # never the user's path again, nor a second hash
    elif (wheel := _unpinned_wheel(run, facts)) is not None and wheel.is_file():
        out["wheel"] = {"filename": wheel.name, "sha256": sha256_of(wheel)}
    runs = run.gpu_runs
    parts = split_parts(run)
    gpus = {json.dumps(r["gpu"], sort_keys=True): r["gpu"] for r in runs.values() if r.get("gpu")}
    out[gpu_reports.SECTION] = {
        "host": socket.gethostname(),
        "gpus": list(gpus.values()),
        "gates": {nodeid: {**{k: v for k, v in r.items() if k != "wheel"}, **_part_of(nodeid, parts)}
                  for nodeid, r in sorted(runs.items())},
        # GPU shards the fork's own script would not run on this tree: tools.gpu_verify counts them done
        "excused": inapplicable_shard_gates(run, gpu_reports.required_gpu_gates()),
    }
    result = (records.get("compile") or {}).get("result") or {}
    if result.get("launcher"):
        out["build"] = {"compiler_launcher": result["launcher"]}
    if result.get("build_time"):
        out.setdefault("build", {})["compile_time"] = {"wall_seconds": result.get("seconds"),
                                                       **result["build_time"]}
    # the toolchain is the configure step's product (computed once there), the rest the compile's
    conf = (records.get("configure") or {}).get("result") or {}
    for key, value in (("toolchain", conf.get("toolchain")), ("reproducible", result.get("reproducible"))):
        if value:
            out.setdefault("build", {})[key] = value
    # who the tree's and the wheel's code ran as, measured in a sandbox (not the code path assumed)
    if (who := sandbox.identity()) is not None:
        out["sandbox"] = who
    steps = step_seconds(records)
    if steps:
        out.setdefault("build", {})["step_seconds"] = steps
    return out
