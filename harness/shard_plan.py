"""The fork's acceptance shards in this run: the plan harness.acceptance_shards filed
(HarnessRun.shard_plan), the tree the shards run from, and the summary the end of the run writes
from the rows it gathered (HarnessRun.shard_rows).
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest

from build_steps import acceptance
from build_steps.acceptance_run import unreported_result

from .state import HarnessRun

#: A shard gate's node id (tests/test_acceptance.py::test_shard[ID]) -> ID.
SHARD_GATE = re.compile(r"::test_shard\[(?P<id>[^\]]+)\]$")

if TYPE_CHECKING:
    from build_steps.acceptance_suite import Shard

#: The terminal summary's section the shard table is printed under.
SECTION = "Acceptance shards (the fork's tools/run_wheel_full_test.sh)"


def source_root(run: HarnessRun) -> Path | None:
    """The tree whose tests/ the shards run: --mxnet-src, or the cwd when it is an MXNet tree
    (None when neither). A --mxnet-src that is only a git checkout (the provenance audit's source
    tree, which needs no MXNet layout) runs no shard; a release run's tree gate then fails."""
    return run.plan.source


def selected_shards(run: HarnessRun) -> list[Shard]:
    return run.shard_plan["selected"] if run.shard_plan else []


def inapplicable_shard_gates(run: HarnessRun, gate_ids: Iterable[str]) -> dict[str, str]:
    """gate id -> why, for the shard gates among ``gate_ids`` that the fork's own script would not
    run on this tree (a conditional file is absent). Read from the fork's shard data, whatever
    --shards-file named: the release set's shards are the fork's."""
    root = source_root(run)
    if root is None:
        return {}
    shards = acceptance.load_suite().shards
    out: dict[str, str] = {}
    for gate in gate_ids:
        for s in shards:
            if gate.endswith(f"::test_shard[{s.id}]") and (why := acceptance.not_applicable(s, root)):
                out[gate] = why
    return out


def split_parts(run: HarnessRun) -> dict[str, str]:
    """gate id suffix ``::test_shard[ID]`` -> "K/N" for each shard this run runs one part of."""
    split = (run.shard_plan or {}).get("split") or {}
    return {f"::test_shard[{sid}]": f"{k}/{n}" for sid, (k, n) in split.items()}


def shard_timeout_override(run: HarnessRun) -> float | None:
    return run.shard_plan["timeout"] if run.shard_plan else None


def acceptance_dir(run: HarnessRun) -> Path:
    given = (run.shard_plan or {}).get("dir")
    if given:
        return Path(given).expanduser().resolve()
    # Beside the checkout, not in the run dir: a green run's run dir is removed at the end,
    # and the table's log paths must stay readable. Every xdist worker derives the same run name.
    return run.config.rootpath / ".harness" / "acceptance" / run.dir.root.name


def notes(run: HarnessRun) -> list[str]:
    """The selected shards this run leaves out, and why (computed on the controller)."""
    root = source_root(run)
    if root is None:
        return ["acceptance shards not run: no MXNet source tree (--mxnet-src) holds the fork's tests"]
    return [f"acceptance shard {s.id} not applicable: {why}" for s in selected_shards(run)
            if (why := acceptance.not_applicable(s, root))]


def shard_log_dir(run: HarnessRun) -> Path:
    """Where each shard's log and junit XML go (tests/test_acceptance.py hands it to run_shard)."""
    return acceptance_dir(run) / "shards"


def has_table(run: HarnessRun) -> bool:
    """Whether this run has a shard table: a shard gate filed its row, or one began and never
    reported (the run was interrupted in it). A run whose shard gates all failed at setup (its build
    failed) has none: the gate table says it."""
    return bool(run.shard_rows) or any(sid not in run.shard_reported for sid in run.shard_started)


def unreported_rows(run: HarnessRun) -> dict[str, dict[str, Any]]:
    """A row for every shard gate this run collected that filed none: the run ended (an interrupt,
    ``timeout -s INT``, -x) while the shard ran, or before it began. INCOMPLETE, with what the
    log of one cut short shows it passed and its part (K/N of a split shard): a run cut short must
    never read as a pass. Only once some shard gate began (a run stopped before the shards, or a
    --co run, has no acceptance table)."""
    if not run.shard_plan or not has_table(run):
        return {}
    by_id = run.shard_plan["suite"].by_id()
    split = run.shard_plan.get("split") or {}
    why = "the run was interrupted" if run.exitstatus == pytest.ExitCode.INTERRUPTED else "the run ended"
    now = time.monotonic()
    out = {}
    for sid in run.shard_requested:
        if sid in run.shard_rows or sid not in by_id:
            continue
        began = run.shard_started.get(sid)
        k_n = split.get(sid)
        part = f"{k_n[0]}/{k_n[1]}" if k_n else ""
        if sid in run.shard_reported:
            # its gate ended before the shard ran (a setup error): the gate table says why
            shard = by_id[sid]
            out[sid] = {"id": sid, "lane": shard.lane, "seconds": 0.0, "log": "", "result": "NOT_RUN", "summary": "",
                        "reason": run.shard_reported[sid] or "its gate failed before the shard ran", "failing": [],
                        "part": part}
            continue
        out[sid] = unreported_result(by_id[sid], shard_log_dir(run) / f"{sid}.log",
                                     started=None if began is None else now - began, part=part, why=why).to_dict()
    return out


def write_summary(run: HarnessRun, created: datetime | None = None) -> tuple[list[str], dict[str, Any]]:
    """The shard table's lines, and the document written to ``summary.json``/``summary.md`` in the
    acceptance dir (the provenance JSON gets it as its ``acceptance`` key). The shards the run
    requested but never got a result of are rows too (unreported_rows): ``passed`` is true only
    when every requested shard reported PASS."""
    missing = unreported_rows(run)
    rows = sorted([*run.shard_rows.values(), *missing.values()], key=lambda r: r["id"])
    lines = acceptance.table_lines(rows)
    cut = sorted(r["id"] for r in missing.values() if r["result"] == "INCOMPLETE" and r["log"])
    never = sorted(r["id"] for r in missing.values() if r["result"] == "INCOMPLETE" and not r["log"])
    incomplete = "; ".join([*([f"cut short: {', '.join(cut)}"] if cut else []),
                            *([f"not started: {', '.join(never)}"] if never else [])])
    if incomplete:
        lines.append(f"NOT COMPLETE, not a pass: {incomplete}")
    lines += notes(run)
    created = created or datetime.now(timezone.utc)
    doc = {"created": created.isoformat(timespec="seconds"),
           "shards_file": str(run.shard_plan["suite"].source) if run.shard_plan else "",
           "shards": rows, "mxnet": run.shard_mxnet,
           "passed": bool(rows) and not missing and all(r["result"] == "PASS" for r in rows),
           "complete": not missing}
    out = acceptance_dir(run)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    header = {"Shards file": doc["shards_file"], "When": doc["created"]}
    if incomplete:
        header["NOT COMPLETE"] = incomplete
    mx = run.shard_mxnet
    if mx:
        header["mxnet"] = f"{mx.get('version')} from {mx.get('file')}"
        header["num_gpus()"] = mx.get("num_gpus")
        header["Features enabled"] = " ".join(k for k, v in (mx.get("features") or {}).items() if v)
    (out / "summary.md").write_text(acceptance.summary_markdown(rows, header))
    lines.append(f"summary: {out / 'summary.md'}")
    return lines, doc
