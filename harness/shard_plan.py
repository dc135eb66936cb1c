"""The fork's acceptance shards in this run: the plan harness.plugins.acceptance_shards filed
(HarnessRun.shard_plan), the tree the shards run from, and the shard table the end of the run
writes (build_steps.acceptance.table) from the rows the ledger gathered (HarnessRun.shard_rows).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from build_steps.acceptance import table as acceptance_table
from build_steps.acceptance.suite import load_suite

from .state import HarnessRun

if TYPE_CHECKING:
    from build_steps.acceptance.suite import Shard

#: A shard gate's node id (tests/test_acceptance.py::test_shard[ID]) -> ID.
SHARD_GATE = re.compile(r"::test_shard\[(?P<id>[^\]]+)\]$")
#: The terminal summary's section the shard table is printed under.
SECTION = "Acceptance shards (the fork's tools/run_wheel_full_test.sh)"


def source_root(run: HarnessRun) -> Path | None:
    """The tree whose tests/ the shards run (the run plan's; None when the run names none). A
    --mxnet-src that is only a git checkout runs no shard; a release run's tree gate then fails."""
    return run.plan.source


def selected_shards(run: HarnessRun) -> list[Shard]:
    return run.shard_plan["selected"] if run.shard_plan else []


def inapplicable_shard_gates(run: HarnessRun, gate_ids: Iterable[str]) -> dict[str, str]:
    """gate id -> why, for the shard gates the fork's own script would not run on this tree; from
    the fork's shard data, whatever --shards-file named: the release set's shards are the fork's."""
    return acceptance_table.inapplicable_gates(source_root(run), gate_ids, load_suite().shards)


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


def has_table(run: HarnessRun) -> bool:
    """Whether this run has a shard table: a shard gate filed its row, or one began and never
    reported (the run was interrupted in it). A run whose shard gates all failed at setup (its build
    failed) has none: the gate table says it."""
    return bool(run.shard_rows) or any(sid not in run.shard_reported for sid in run.shard_started)


def write_summary(run: HarnessRun, created: datetime | None = None) -> tuple[list[str], dict[str, Any]]:
    """The shard table's lines and document; the shards the run requested but never got a result of
    are rows too, only once some shard gate began (a run stopped before the shards, or a --co run,
    has no acceptance table)."""
    plan = run.shard_plan
    missing = {} if not plan or not has_table(run) else acceptance_table.unreported_rows(
        plan["suite"], run.shard_requested, run.shard_rows, run.shard_reported, run.shard_started,
        plan.get("split") or {}, acceptance_dir(run) / "shards",
        "the run was interrupted" if run.exitstatus == pytest.ExitCode.INTERRUPTED else "the run ended")
    return acceptance_table.write_summary(
        acceptance_dir(run), run.shard_rows, missing, acceptance_table.notes(source_root(run), selected_shards(run)),
        str(plan["suite"].source) if plan else "", run.shard_mxnet, created)
