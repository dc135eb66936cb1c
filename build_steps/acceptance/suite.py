"""The fork's acceptance shards as data: ``shards.toml`` read and checked into a
``ShardSuite``, and whether one shard applies to a given source tree.

The fork's ``tools/run_wheel_full_test.sh`` runs about thirty pytest "shards" of its own tests
against a freshly installed wheel. The shard list lives in this repository as a data file
(``shards.toml`` beside this module), read from the script of the pinned commit once
and kept by hand; build_steps.acceptance.fork_script reads the script again so a selftest can tell
when the two disagree.
"""
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

DEFAULT_SHARDS_FILE = Path(__file__).resolve().with_name("shards.toml")
LANES = ("cpu", "dnnl", "quant", "onnx", "gpu")
_SHARD_KEYS = {"id", "description", "lane", "paths", "args", "workers", "only_if_exists", "timeout_min"}


@dataclass(frozen=True)
class Shard:
    id: str
    description: str
    lane: str
    paths: tuple[str, ...]
    args: tuple[str, ...] = ()
    #: the lane whose worker count the fork passes as ``-n`` (its $PARALLEL_<LANE>), or None
    workers: str | None = None
    #: the fork runs the shard only when this path exists in the tree
    only_if_exists: str | None = None
    timeout_min: float = 30

    def pytest_args(self, parallel: Mapping[str, int]) -> list[str]:
        out = [*self.paths, *self.args]
        if self.workers:
            out += ["-n", str(parallel[self.workers])]
        return out


@dataclass(frozen=True)
class ShardSuite:
    source: Path
    shards: tuple[Shard, ...]
    parallel: dict[str, int]
    test_requirements: tuple[str, ...]
    cwd: str = "."
    fork_script: str = "tools/run_wheel_full_test.sh"
    fork_commit: str = ""

    def by_id(self) -> dict[str, Shard]:
        return {s.id: s for s in self.shards}


def load_suite(path: Path | str | None = None) -> ShardSuite:
    """Read and check a shard data file; a malformed one is a UsageError naming the entry."""
    path = Path(path or DEFAULT_SHARDS_FILE)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"shard data file {path}: {exc.strerror}; pass an existing file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"shard data file {path} is not valid TOML: {exc}") from None
    run = data.get("run", {})
    parallel = {k: int(v) for k, v in data.get("parallel", {}).items()}
    default_timeout = float(run.get("timeout_min", 30))
    shards: list[Shard] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("shard", [])):
        where = f"shard data file {path}, [[shard]] #{i + 1} ({raw.get('id', 'no id')})"
        missing = [k for k in ("id", "description", "lane", "paths") if not raw.get(k)]
        if missing:
            raise UsageError(f"{where}: missing {', '.join(missing)}")
        if raw["id"] in seen:
            raise UsageError(f"{where}: the id {raw['id']} is used twice")
        seen.add(raw["id"])
        if raw["lane"] not in LANES:
            raise UsageError(f"{where}: lane {raw['lane']!r} is not one of {', '.join(LANES)}")
        workers = raw.get("workers")
        if workers is not None and workers not in parallel:
            raise UsageError(f"{where}: workers = {workers!r} has no entry in [parallel]")
        unknown = set(raw) - _SHARD_KEYS
        if unknown:
            raise UsageError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
        shards.append(Shard(id=raw["id"], description=raw["description"], lane=raw["lane"],
                            paths=tuple(raw["paths"]), args=tuple(raw.get("args", ())), workers=workers,
                            only_if_exists=raw.get("only_if_exists"),
                            timeout_min=float(raw.get("timeout_min", default_timeout))))
    if not shards:
        raise UsageError(f"shard data file {path} lists no [[shard]] entries")
    fork = data.get("fork", {})
    return ShardSuite(source=path, shards=tuple(shards), parallel=parallel,
                      test_requirements=tuple(data.get("requirements", {}).get("test", ())),
                      cwd=run.get("cwd", "."), fork_script=fork.get("script", "tools/run_wheel_full_test.sh"),
                      fork_commit=fork.get("commit", ""))


def not_applicable(shard: Shard, source_root: Path) -> str | None:
    """Why the fork's script would not run this shard on this tree, or None."""
    if shard.only_if_exists and not (Path(source_root) / shard.only_if_exists).exists():
        return f"{shard.only_if_exists} is absent (the fork's script runs {shard.id} only when it exists)"
    return None
