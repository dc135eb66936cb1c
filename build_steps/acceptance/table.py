"""The acceptance shards' table at the end of a run: a row for every shard the run requested (those
it never got a result of are INCOMPLETE or NOT_RUN, never absent), written to ``summary.json`` and
``summary.md`` in the acceptance dir (harness.shard_plan gathers what the run filed)."""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .summary import summary_markdown, table_lines
from .run import unreported_result
from .suite import Shard, ShardSuite, not_applicable


def inapplicable_gates(root: Path | None, gate_ids: Iterable[str], shards: Iterable[Shard]) -> dict[str, str]:
    """gate id -> why, for the shard gates among ``gate_ids`` that the fork's own script would not
    run on the tree ``root`` (a conditional file is absent)."""
    if root is None:
        return {}
    out: dict[str, str] = {}
    shards = list(shards)
    for gate in gate_ids:
        for s in shards:
            if gate.endswith(f"::test_shard[{s.id}]") and (why := not_applicable(s, root)):
                out[gate] = why
    return out


def notes(root: Path | None, selected: Iterable[Shard]) -> list[str]:
    """The selected shards the run leaves out, and why."""
    if root is None:
        return ["acceptance shards not run: no MXNet source tree (--mxnet-src) holds the fork's tests"]
    return [f"acceptance shard {s.id} not applicable: {why}" for s in selected if (why := not_applicable(s, root))]


def unreported_rows(suite: ShardSuite, requested: Iterable[str], rows: Mapping[str, Any], reported: Mapping[str, str],
                    started: Mapping[str, float], split: Mapping[str, tuple[int, int]], log_dir: Path,
                    why: str) -> dict[str, dict[str, Any]]:
    """A row for every requested shard that filed none: the run ended (an interrupt, ``timeout -s
    INT``, -x) while the shard ran, or before it began. INCOMPLETE, with what the log of one cut short
    shows it passed and its part (K/N of a split shard): a run cut short must never read as a pass.
    ``reported``: shards whose gate ended before the shard ran (NOT_RUN, the gate table says why)."""
    by_id = suite.by_id()
    now = time.monotonic()
    out = {}
    for sid in requested:
        if sid in rows or sid not in by_id:
            continue
        began = started.get(sid)
        k_n = split.get(sid)
        part = f"{k_n[0]}/{k_n[1]}" if k_n else ""
        if sid in reported:
            shard = by_id[sid]
            out[sid] = {"id": sid, "lane": shard.lane, "seconds": 0.0, "log": "", "result": "NOT_RUN", "summary": "",
                        "reason": reported[sid] or "its gate failed before the shard ran", "failing": [],
                        "part": part}
            continue
        out[sid] = unreported_result(by_id[sid], log_dir / f"{sid}.log",
                                     started=None if began is None else now - began, part=part, why=why).to_dict()
    return out


def write_summary(out: Path, rows: Mapping[str, Any], missing: Mapping[str, dict[str, Any]], notes: list[str],
                  shards_file: str, mxnet: dict[str, Any] | None, created: datetime | None = None
                  ) -> tuple[list[str], dict[str, Any]]:
    """The shard table's lines, and the document written to ``summary.json``/``summary.md`` in
    ``out`` (the provenance JSON gets it as its ``acceptance`` key): ``passed`` only when every
    requested shard reported PASS."""
    table = sorted([*rows.values(), *missing.values()], key=lambda r: r["id"])
    lines = table_lines(table)
    cut = sorted(r["id"] for r in missing.values() if r["result"] == "INCOMPLETE" and r["log"])
    never = sorted(r["id"] for r in missing.values() if r["result"] == "INCOMPLETE" and not r["log"])
    incomplete = "; ".join([*([f"cut short: {', '.join(cut)}"] if cut else []),
                            *([f"not started: {', '.join(never)}"] if never else [])])
    if incomplete:
        lines.append(f"NOT COMPLETE, not a pass: {incomplete}")
    lines += notes
    created = created or datetime.now(timezone.utc)
    doc = {"created": created.isoformat(timespec="seconds"), "shards_file": shards_file,
           "shards": table, "mxnet": mxnet,
           "passed": bool(table) and not missing and all(r["result"] == "PASS" for r in table),
           "complete": not missing}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    header: dict[str, Any] = {"Shards file": doc["shards_file"], "When": doc["created"]}
    if incomplete:
        header["NOT COMPLETE"] = incomplete
    if mxnet:
        header["mxnet"] = f"{mxnet.get('version')} from {mxnet.get('file')}"
        header["num_gpus()"] = mxnet.get("num_gpus")
        header["Features enabled"] = " ".join(k for k, v in (mxnet.get("features") or {}).items() if v)
    (out / "summary.md").write_text(summary_markdown(table, header))
    lines.append(f"summary: {out / 'summary.md'}")
    return lines, doc
