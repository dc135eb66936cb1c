"""The tree's CMake (or a custom command of the build) replaces a file of the CMake File API reply
in the build dir with a symbolic link to an operator's file outside the sandbox: the harness reads
the reply outside any sandbox, so following the link would show that file's contents in the
configure's facts, the report or an error message (issue 47 item 3, the File API reader)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant

SECRET = "ghp_read_through_a_planted_file_api_link"


def plant(tmp: Path) -> Plant:
    secret = tmp / "root" / ".config" / "harness" / "token.json"
    secret.parent.mkdir(parents=True)
    secret.write_text(f'{{"token": "{SECRET}"}}\n')
    build = tmp / "build"
    reply = build / ".cmake" / "api" / "v1" / "reply"
    reply.mkdir(parents=True)
    (reply / "index-9999.json").symlink_to(secret)
    return Plant(tmp, tmp / "fired", {"build": build, "index": reply / "index-9999.json"})


def _shown(p: Plant, text: str) -> None:
    if SECRET in text:
        p.marker.write_text(f"the harness read: {text}\n")


def without_fix(p: Plant) -> None:
    _shown(p, Path(p.extra["index"]).read_text())  # an open() that follows the link


def with_harness(p: Plant) -> None:
    from build_steps.errors import StepError
    from build_steps.readers import cmake_file_api
    try:
        reply = cmake_file_api.read_reply(p.extra["build"], ["mxnet"])
    except StepError as exc:
        assert "is a link" in str(exc) and "\n" not in str(exc), exc
        _shown(p, str(exc))
    else:
        raise AssertionError(f"a linked reply was read: {reply}")
