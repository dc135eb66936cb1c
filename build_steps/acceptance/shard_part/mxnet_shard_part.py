"""pytest plugin loaded into an acceptance shard's own pytest (``-p mxnet_shard_part``) when the
harness runs one part of a split shard (``--shard-split=SHARD:K/N``).

A test belongs to part ``sha256(nodeid) mod N + 1``: a function of its id alone, so every run,
every xdist worker and every host puts it in the same part, whatever the collection order, and
the N parts together are the shard's tests, each exactly once. The rest is deselected (pytest's
own count says how many). This file imports nothing of the harness: it runs in the wheel's venv.
"""
from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the shard's own pytest loads this plugin
    import pytest

ENV = "MXNET_SHARD_PART"


def part_of(nodeid: str, parts: int) -> int:
    return int(hashlib.sha256(nodeid.encode()).hexdigest(), 16) % parts + 1


def parse(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    return int(k), int(n)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    k, n = parse(spec)
    drop = [i for i in items if part_of(i.nodeid, n) != k]
    if drop:
        config.hook.pytest_deselected(items=drop)
        gone = set(map(id, drop))
        items[:] = [i for i in items if id(i) not in gone]
