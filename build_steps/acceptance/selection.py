"""Which shards a run runs, and how: the --shards, --lanes, --shard-workers and --shard-split
options read against the shard data (build_steps.acceptance.suite), each bad value a UsageError
naming it and the form it must take."""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .suite import LANES, Shard, ShardSuite, load_suite
from ..errors import UsageError

_SPLIT = re.compile(r"^([A-Za-z0-9_.-]+):(\d+)/(\d+)$")


def parse_shard_split(values: Iterable[str] | None, known: Collection[str]) -> dict[str, tuple[int, int]]:
    """``["gpu_operator_numpy:2/3", ...]`` -> {shard id: (2, 3)}; UsageError naming a bad one."""
    out: dict[str, tuple[int, int]] = {}
    for text in values or ():
        m = _SPLIT.match(text.strip())
        if not m:
            raise UsageError(f"--shard-split {text}: write SHARD:K/N (e.g. gpu_operator_numpy:2/3)")
        shard, k, n = m.group(1), int(m.group(2)), int(m.group(3))
        if shard not in known:
            raise UsageError(f"--shard-split {text}: no shard {shard!r}; known: {', '.join(known)}")
        if not (n >= 2 and 1 <= k <= n):
            raise UsageError(f"--shard-split {text}: need N >= 2 and 1 <= K <= N")
        if shard in out:
            raise UsageError(f"--shard-split {text}: {shard} is split twice; one run runs one part")
        out[shard] = (k, n)
    return out


def parse_id_list(text: str | None, known: Collection[str], what: str) -> tuple[str, ...] | None:
    """``a,b`` -> ("a", "b"), each checked against ``known``; None when not given."""
    if not text:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"--{what} {text}: unknown {', '.join(bad)}; known: {', '.join(known)}")
    return names


def select(suite: ShardSuite, shards: Collection[str] | None = None,
           lanes: Collection[str] | None = None) -> list[Shard]:
    """The shards named by ``--shards`` and in ``--lanes`` (each filter only when given)."""
    return [s for s in suite.shards if (shards is None or s.id in shards) and (lanes is None or s.lane in lanes)]


def parse_parallel(values: Iterable[str] | None, suite: ShardSuite) -> dict[str, int]:
    """``--shard-workers gpu=2`` overrides on top of the data file's [parallel] (the fork's defaults)."""
    out = dict(suite.parallel)
    for item in values or ():
        lane, _, n = item.partition("=")
        if lane not in out or not n.isdigit() or int(n) < 1:
            raise UsageError(f"--shard-workers {item}: write LANE=N with LANE one of {', '.join(out)} "
                             "and N a positive number")
        out[lane] = int(n)
    return out


#: The options the shard plan is read from (option_table's acceptance group, by dest).
SHARD_OPTIONS = ("shards_file", "shards", "lanes", "shard_workers", "shard_split", "shard_timeout", "acceptance_dir")


def shard_plan(given: Mapping[str, Any]) -> dict[str, Any]:
    """The run's shard plan from the SHARD_OPTIONS' values: the suite, the selected shards, the
    workers per lane, the timeout override, the acceptance dir given and the split; UsageError
    naming a bad value."""
    suite = load_suite(given["shards_file"])
    known = [s.id for s in suite.shards]
    ids = parse_id_list(given["shards"], known, "shards")
    lanes = parse_id_list(given["lanes"], LANES, "lanes")
    parallel = parse_parallel(given["shard_workers"], suite)
    split = parse_shard_split(given["shard_split"], known)
    timeout = given["shard_timeout"]
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--shard-timeout {timeout}: must be a positive number of minutes")
    return {"suite": suite, "selected": select(suite, ids, lanes), "parallel": parallel,
            "timeout": timeout, "dir": given["acceptance_dir"], "split": split}
