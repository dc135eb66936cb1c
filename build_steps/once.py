"""Run an expensive step once for all pytest-xdist workers, and remember failures.

The one run-once store of the harness. The pattern is pytest-xdist's documented one: every worker
runs the session fixture, the first to take a file lock does the work and writes a small record,
the others wait on the lock and read the record. Three shapes, one failure policy:

* :func:`run_once` shares a JSON-able product (the build chain's step results, through
  :class:`JsonRecord`);
* :func:`shared_product` shares a richer object as a pickle (the extracted wheel, the audit), and
  :func:`load_shared` reads it back where no fixture can be asked (a report hook);
* :func:`acquire` / :func:`release` share a product with a user count: the last release removes
  it (the throwaway venv).

The failure policy: any exception of the producing process (BaseException: an interrupt too) is
recorded (its text, and whether it was an interrupt) and re-raised there; every later process
raises from the record instead of running the step again. A build step is reported once, in full,
by the process that ran it, the others raise :class:`StepFailedElsewhere` with a one-line pointer
(and the gates plugin stops the session); a shared product (the extracted wheel) is a fact every
gate reports, so the others raise :class:`ProductFailed` with the same message.
"""
from __future__ import annotations

import dataclasses
import json
import pickle
import typing
from pathlib import Path, PurePath
from typing import Any, Callable, ClassVar, Iterable, Mapping, TypeVar

from filelock import FileLock

from .errors import (BuildInterrupted, HarnessError, NotJudged, NotJudgedElsewhere, ProductFailed,
                     ProductNotJudged, StepFailedElsewhere)

#: what a shared product's producer returns, and so what every process gets back
_T = TypeVar("_T")
#: a JSON record as json writes and reads it: its values are whatever the record's writer put
Record = dict[str, Any]
#: a run-once record's failure -> the exception every later process raises from it
Elsewhere = Callable[[str, Record], HarnessError]


def _failure(exc: BaseException) -> Record:
    first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
    return {"failed": True, "error": first_line, "message": str(exc),
            "interrupted": isinstance(exc, BuildInterrupted), "not_judged": isinstance(exc, NotJudged)}


def _step_failed(key: str, record: Record) -> HarnessError:
    cls = NotJudgedElsewhere if record.get("not_judged") else StepFailedElsewhere
    return cls(f"step {key!r} already failed in this run (reported once, above): {record['error']}")


def _product_failed(key: str, record: Record) -> HarnessError:
    cls = ProductNotJudged if record.get("not_judged") else ProductFailed
    return cls(record["message"] if "message" in record else record["error"])


def _raise_if_failed(key: str, record: Record, elsewhere: Elsewhere = _step_failed) -> None:
    if record.get("failed"):
        raise elsewhere(key, record)


def _once(shared_dir: Path, key: str, produce: Callable[[], _T], suffix: str, dump: Callable[[Path, Record], None],
          load: Callable[[Path], Record], elsewhere: Elsewhere = _step_failed) -> _T:
    shared_dir = Path(shared_dir)
    shared_dir.mkdir(parents=True, exist_ok=True)
    record = shared_dir / f"{key}{suffix}"
    with FileLock(str(record) + ".lock"):
        if record.exists():
            data = load(record)
            _raise_if_failed(key, data, elsewhere)
            # what ``produce`` returned in the process that ran it, written by this same function
            return typing.cast(_T, data["result"])
        try:
            result = produce()
        except BaseException as exc:
            dump(record, _failure(exc))
            raise
        dump(record, {"failed": False, "result": result})
        return result


def _dump_json(path: Path, data: Record) -> None:
    path.write_text(json.dumps(data))


def _load_json(path: Path) -> Record:
    data: Record = json.loads(path.read_text())
    return data


def _dump_pickle(path: Path, data: Record) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(data))
    tmp.replace(path)


def _load_pickle(path: Path) -> Record:
    data: Record = pickle.loads(path.read_bytes())
    return data


def run_once(shared_dir: Path, key: str, produce: Callable[[], Record]) -> Record:
    """Return ``produce()``'s JSON-able dict, computed by exactly one process per ``shared_dir``.

    ``shared_dir`` must be common to all workers of one test run (the parent of pytest's
    basetemp under xdist), so a second ``pytest`` run does the work again; caching across runs
    is each step's own business (an unchanged tree is a no-op compile).
    """
    return _once(shared_dir, key, produce, ".json", _dump_json, _load_json)


def shared_product(shared_dir: Path, key: str, produce: Callable[[], _T]) -> _T:
    """``produce()`` computed by one process for all xdist workers, shared as a pickle (for
    objects richer than JSON)."""
    return _once(shared_dir, key, produce, ".pickle", _dump_pickle, _load_pickle, _product_failed)


def load_result(shared_dir: Path, key: str) -> Record | None:
    """The result another process filed with :func:`run_once`, or None (none, unreadable, or the
    step failed): the JSON counterpart of :func:`load_shared`."""
    try:
        data = _load_json(Path(shared_dir) / f"{key}.json")
    except (OSError, ValueError):
        return None
    result = None if data.get("failed") else data.get("result")
    return result if isinstance(result, dict) else None


def load_shared(shared_dir: Path, key: str) -> Any:
    """The product another process stored with :func:`shared_product`, or None (none yet, or
    the step failed). Any: the product is whatever the key's producer returned; the caller names
    the key, so it knows the type."""
    record = Path(shared_dir) / f"{key}.pickle"
    if not record.exists():
        return None
    data = _load_pickle(record)
    return None if data.get("failed") else data["result"]


def acquire(shared_dir: Path, key: str, make: Callable[[], Record]) -> Record:
    """``make()``'s JSON-able product (with a ``root`` path), made once and shared by every
    process that acquires ``key``.

    Like :func:`run_once`, plus a user count: each acquire must be paired with :func:`release`,
    and the last release removes the product. A process that comes after the removal (an xdist
    worker whose first runtime test starts after another worker finished) makes it again instead
    of using a deleted product.
    """
    shared_dir = Path(shared_dir)
    shared_dir.mkdir(parents=True, exist_ok=True)
    state_file = shared_dir / f"{key}.state.json"
    with FileLock(str(state_file) + ".lock"):
        state = _load_json(state_file) if state_file.exists() else {}
        _raise_if_failed(key, state)
        product = state.get("product")
        if not product or not Path(product["root"]).exists():
            try:
                product = make()
            except BaseException as exc:
                _dump_json(state_file, _failure(exc))
                raise
            state = {"product": product, "users": 0}
        state["users"] = state.get("users", 0) + 1
        _dump_json(state_file, state)
        return typing.cast(Record, product)  # make()'s product, or the one an earlier make() wrote


def release(shared_dir: Path, key: str, cleanup: Callable[[Record], None] | None = None) -> None:
    """Drop one user of ``key``; the last one calls ``cleanup(product)``."""
    state_file = Path(shared_dir) / f"{key}.state.json"
    with FileLock(str(state_file) + ".lock"):
        if not state_file.exists():
            return
        state = _load_json(state_file)
        if not state.get("product"):
            return
        state["users"] = max(0, state.get("users", 1) - 1)
        if state["users"] == 0 and cleanup is not None:
            cleanup(state["product"])
            state["product"] = None
        _dump_json(state_file, state)


# ---------------------------------------------------------------------------------------------
# the codec between step-result dataclasses and the JSON records

def _plain(items: Iterable[tuple[str, Any]]) -> Record:
    return {k: str(v) if isinstance(v, PurePath) else v for k, v in items}


_R = TypeVar("_R", bound="JsonRecord")


class JsonRecord:
    """Mixin for a step-result dataclass: ``to_json()`` is :func:`dataclasses.asdict` with paths
    as strings; ``from_json(d)`` restores the fields whose type hint is a Path."""

    #: set by @dataclass on each subclass; declared here so mypy knows a JsonRecord is a dataclass
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_json(self) -> Record:
        return dataclasses.asdict(self, dict_factory=_plain)

    @classmethod
    def from_json(cls: type[_R], d: Mapping[str, Any] | None) -> _R | None:
        if not d:
            return None
        hints = typing.get_type_hints(cls)
        values = {}
        for f in dataclasses.fields(cls):
            if f.name not in d:
                continue
            value = d[f.name]
            if value is not None and _is_path(hints.get(f.name)):
                value = Path(value)
            values[f.name] = value
        return cls(**values)


def _is_path(hint: object) -> bool:
    if hint is None:
        return False
    if isinstance(hint, type):
        return issubclass(hint, PurePath)
    return any(isinstance(a, type) and issubclass(a, PurePath) for a in typing.get_args(hint))
