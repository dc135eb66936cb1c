"""Read a CMakeCache.txt: the feature toggles and MXNET_CUDA_ARCH the build was configured with.

The fork's gate parsed the cache the same way (docs/background.md): ``KEY:TYPE=VALUE``
lines, comments skipped, the last occurrence wins. A value that is not a CMake boolean is kept
raw and reported as unknown rather than guessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import PlantedLink, UsageError, read_log

_TRUE = {"1", "ON", "TRUE", "YES", "Y"}
_FALSE = {"0", "OFF", "FALSE", "NO", "N", "IGNORE", "NOTFOUND", ""}


@dataclass(frozen=True)
class CacheEntry:
    key: str
    type: str
    value: str

    @property
    def enabled(self) -> bool | None:
        """True/False for a CMake boolean, None for anything else (e.g. a path)."""
        return to_bool(self.value)


def to_bool(value: str | None) -> bool | None:
    """A cache value as CMake reads a boolean: True/False, or None when it is not one (or absent)."""
    if value is None:
        return None
    v = value.strip().upper()
    if v in _TRUE:
        return True
    if v in _FALSE or v.endswith("-NOTFOUND"):
        return False
    return None


def read_cache(path: Path) -> dict[str, CacheEntry]:
    """``{key: CacheEntry}`` of a CMakeCache.txt; a missing or unreadable file is a UsageError.

    The build dir is the tree's CMake's to write: the cache is read without following a link and
    only as a plain file (errors.read_log), so a cache the configure turned into a link to an
    operator's file never becomes entries in the run's record."""
    path = Path(path)
    try:
        text = read_log(path).decode("utf-8", errors="replace")
    except PlantedLink as exc:
        raise UsageError(f"CMake cache {exc}") from None
    except OSError as exc:
        raise UsageError(f"CMake cache {path}: cannot read it ({exc.strerror}); pass <build>/CMakeCache.txt") from None
    entries = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("//", "#")) or "=" not in line:
            continue
        head, value = line.split("=", 1)
        key, _, type_ = head.partition(":")
        entries[key.strip()] = CacheEntry(key.strip(), type_.strip(), value.strip())
    return entries


def feature_states(entries: Mapping[str, CacheEntry], keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{key: {"enabled": bool|None, "raw": str|None}}`` for each requested toggle."""
    out = {}
    for key in keys:
        entry = entries.get(key)
        out[key] = {"enabled": entry.enabled if entry else None, "raw": entry.value if entry else None}
    return out


def cache_build_dir(cache: Path) -> Path:
    """The build tree a cache belongs to (the cache's directory)."""
    return Path(cache).resolve().parent
