"""The symbol versions a wheel needs from the host's glibc and libstdc++, against the floor it promises.

A versioned reference (``memcpy@GLIBC_2.14``) makes the loader refuse the library on a host whose
glibc does not define that version ("version `GLIBC_2.40' not found"), so the highest version per
family is the oldest host the wheel can run on. The floor is the profile's (its reference host),
an ``--glibc-floor`` option may replace it, and a ``manylinux_X_Y`` platform tag promises glibc X.Y
on its own: the lowest of these is what the wheel is held to.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from packaging.tags import Tag

from ..errors import UsageError
from .wheel_name import platform_of

#: The families judged, and what defines them on the host.
FAMILIES = {"GLIBC": "glibc", "GLIBCXX": "libstdc++", "CXXABI": "libstdc++ (C++ ABI)"}

_VERSION_RE = re.compile(r"^(" + "|".join(FAMILIES) + r")_(\d+(?:\.\d+)*)$")
#: Legacy manylinux tags and the glibc each promises (PEP 599, PEP 571, PEP 513).
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def split_version(name: str) -> tuple[str, tuple[int, ...]] | None:
    """``"GLIBC_2.34"`` -> ``("GLIBC", (2, 34))``; None for other names (GLIBC_PRIVATE, GCC_3.0)."""
    m = _VERSION_RE.match(name)
    if not m:
        return None
    return m.group(1), tuple(int(x) for x in m.group(2).split("."))


def vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def parse_floor(text: str) -> dict[str, str]:
    """``--glibc-floor`` value: ``2.28`` (glibc only) or ``GLIBC_2.28,GLIBCXX_3.4.25,CXXABI_1.3.11``."""
    out: dict[str, str] = {}
    for item in [i.strip() for i in text.split(",") if i.strip()]:
        if re.fullmatch(r"\d+(?:\.\d+)+", item):
            out["GLIBC"] = item
            continue
        parsed = split_version(item)
        if parsed is None:
            raise UsageError(
                f"--glibc-floor {text}: {item!r} is neither a glibc version (e.g. 2.28) nor "
                "FAMILY_VERSION with FAMILY one of GLIBC, GLIBCXX, CXXABI (e.g. GLIBCXX_3.4.25)")
        out[parsed[0]] = ".".join(map(str, parsed[1]))
    if not out:
        raise UsageError(f"--glibc-floor {text!r} is empty: give e.g. 2.28 or GLIBC_2.28,GLIBCXX_3.4.25")
    return out


def tag_glibc(tags: Iterable[Tag | str]) -> tuple[str | None, str | None]:
    """(glibc version, tag) the lowest manylinux platform tag among ``tags`` promises, or (None, None)."""
    best: tuple[str | None, str | None] = (None, None)
    for tag in tags:
        platform = platform_of(tag)
        m = re.match(r"manylinux_(\d+)_(\d+)_", platform)
        version = f"{m.group(1)}.{m.group(2)}" if m else next(
            (v for k, v in _LEGACY_MANYLINUX.items() if platform.startswith(k + "_")), None)
        if version and (best[0] is None or vtuple(version) < vtuple(best[0])):
            best = (version, platform)
    return best


def effective_floor(profile_floor: Mapping[str, str], override: Mapping[str, str] | None,
                    tags: Iterable[Tag | str]) -> tuple[dict[str, str], dict[str, str]]:
    """(family -> version, family -> where it comes from) that the wheel is held to."""
    floor = dict(profile_floor)
    source = {f: "profile" for f in floor}
    for family, version in (override or {}).items():
        floor[family], source[family] = version, "--glibc-floor"
    tag_version, tag = tag_glibc(tags)
    if tag_version and ("GLIBC" not in floor or vtuple(tag_version) < vtuple(floor["GLIBC"])):
        floor["GLIBC"], source["GLIBC"] = tag_version, f"platform tag {tag}"
    return floor, source
