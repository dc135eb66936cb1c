"""The acceptance run's report: the per-shard table for the terminal and ``summary.md`` as the
fork writes it. Both read the rows the gates filed (``ShardResult.to_dict()``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def table_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The per-shard table for the terminal (id, lane, result, seconds, pytest summary, log)."""
    if not results:
        return []
    w = max(len(r["id"]) for r in results)
    lines = [f"{'shard':<{w}}  {'lane':<5}  {'result':<10}  {'seconds':>7}  pytest summary / log"]
    for r in sorted(results, key=lambda r: r["id"]):
        text = r["summary"] or r.get("reason") or ""
        if r["summary"] and r.get("reason"):
            text += f" ({r['reason']})"
        lines.append(f"{r['id']:<{w}}  {r['lane']:<5}  {r['result']:<10}  {r['seconds']:>7.1f}  {text}")
        lines.append(f"{'':<{w}}  {'':<5}  {'':<10}  {'':>7}  {r['log']}")
    bad = [r["id"] for r in results if r["result"] != "PASS"]
    lines.append(f"{len(results) - len(bad)}/{len(results)} shards PASS"
                 + (f"; not PASS: {', '.join(sorted(bad))}" if bad else ""))
    return lines


def summary_markdown(results: Sequence[Mapping[str, Any]], header: Mapping[str, Any]) -> str:
    """summary.md as the fork writes it, with the lane, seconds and log columns added."""
    out = ["# MXNet wheel acceptance report", ""]
    out += [f"{k}: `{v}`" for k, v in header.items()] + ["", "## Shard results", "",
                                                          "| Shard | Lane | Result | pytest summary | Seconds | Log |",
                                                          "|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["id"]):
        text = r["summary"] or r.get("reason") or ""
        if r["summary"] and r.get("reason"):
            text += f" ({r['reason']})"  # as the terminal table: a partial count says why it is one
        text = text.replace("|", "\\|")
        out.append(f"| {r['id']} | {r['lane']} | {r['result']} | {text} | {r['seconds']:.1f} | {r['log']} |")
    return "\n".join(out) + "\n"
