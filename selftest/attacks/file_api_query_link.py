"""An earlier build in the same build dir leaves ``.cmake/api/v1/query/client-mxnet-harness/query.json``
as a symbolic link to an operator's file: the harness writes its File API query there before the
next configure, outside any sandbox, so following the link would overwrite that file (issue 47
item 3, the File API reader)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant

KEPT = "the operator's file, kept\n"


def plant(tmp: Path) -> Plant:
    victim = tmp / "root" / ".bashrc"
    victim.parent.mkdir(parents=True)
    victim.write_text(KEPT)
    build = tmp / "build"
    query = build / ".cmake" / "api" / "v1" / "query" / "client-mxnet-harness"
    query.mkdir(parents=True)
    (query / "query.json").symlink_to(victim)
    return Plant(tmp, tmp / "fired", {"build": build, "query": query / "query.json", "victim": victim})


def _check(p: Plant) -> None:
    if p.extra["victim"].read_text() != KEPT:
        p.marker.write_text(f"overwritten: {p.extra['victim'].read_text()}\n")


def without_fix(p: Plant) -> None:
    Path(p.extra["query"]).write_text('{"requests": []}')  # an open("w") that follows the link
    _check(p)


def with_harness(p: Plant) -> None:
    from build_steps.errors import StepError
    from build_steps.readers import cmake_file_api
    try:
        cmake_file_api.write_query(p.extra["build"])
    except StepError as exc:
        assert "cannot write the query" in str(exc), exc
    else:
        raise AssertionError("a query was written through a planted link")
    _check(p)
