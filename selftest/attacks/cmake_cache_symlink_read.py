"""During configure (in its sandbox, which cannot see /root) the tree's CMake code replaces
``<build>/CMakeCache.txt`` with a symbolic link to an operator's file with ``key=value`` lines
(``~/.pypirc``'s ``password = ...``). The harness, outside the sandbox, read the cache with a plain
``read_text`` that followed the link: every ``key=value`` line became a cache entry, and the
configure record (its ``cache``) carried the password into the run's JSON report (found in the
File API review, 2026-12-06)."""
from __future__ import annotations

from pathlib import Path

from selftest.attacks._payload import Plant

SECRET = "pypi-read_through_a_planted_cache_link"


def plant(tmp: Path) -> Plant:
    secret = tmp / "root" / ".pypirc"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"[pypi]\nusername=__token__\npassword={SECRET}\n")
    build = tmp / "build"
    build.mkdir()
    (build / "CMakeCache.txt").symlink_to(secret)
    return Plant(tmp, tmp / "fired", {"cache": build / "CMakeCache.txt"})


def _shown(p: Plant, text: str) -> None:
    if SECRET in text:
        p.marker.write_text(f"the harness read: {text}\n")


def without_fix(p: Plant) -> None:
    text = Path(p.extra["cache"]).read_text()  # what read_cache did
    entries = {line.split("=", 1)[0]: line.split("=", 1)[1] for line in text.splitlines() if "=" in line}
    _shown(p, str(entries))


def with_harness(p: Plant) -> None:
    from build_steps.errors import UsageError
    from build_steps.readers.cmake_cache import read_cache
    try:
        entries = read_cache(p.extra["cache"])
    except UsageError as exc:
        assert "symbolic link" in str(exc) and "not read" in str(exc), exc
        _shown(p, str(exc))
        return
    _shown(p, str({k: e.value for k, e in entries.items()}))
