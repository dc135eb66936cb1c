"""Names: a wheel's file name, and the member names inside it that are safe to extract.

The one parser of wheel file names in the harness: every module that needs the distribution, the
version or the tags of a ``.whl`` name calls :func:`parse_wheel_name` and catches
:class:`WheelNameError`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..errors import WheelNameError


@dataclass(frozen=True)
class WheelName:
    distribution: str          # canonicalized
    version: Version
    build_tag: tuple[()] | tuple[int, str]
    tags: frozenset[Tag]

    @property
    def tag_strings(self) -> frozenset[str]:
        return frozenset(str(t) for t in self.tags)


def parse_wheel_name(wheel: str | PurePath) -> WheelName:
    """The parts of a wheel's file name (a str or a path; only the last component counts)."""
    filename = PurePath(wheel).name
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise WheelNameError(filename, str(exc)) from None
    return WheelName(canonicalize_name(name), version, build, frozenset(tags))


def platform_of(tag: Tag | str) -> str:
    """The platform part of a tag (a :class:`Tag` or its ``py-abi-platform`` string)."""
    return tag.platform if isinstance(tag, Tag) else str(tag).rsplit("-", 1)[-1]


# ---------------------------------------------------------------------------------------------
# member names

_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def unsafe_reason(name: str) -> str | None:
    """Why a member name could write outside the extraction dir (or be ambiguous), else None."""
    if not name or "\x00" in name:
        return "an empty name or a NUL byte in it"
    if "\\" in name:
        return "a backslash (on Windows a path separator, which could escape the directory)"
    if name.startswith("/"):
        return "an absolute path"
    if _DRIVE_RE.match(name):
        return "a drive-letter (absolute) path"
    parts = name.rstrip("/").split("/")
    if ".." in parts:
        return "a '..' component that escapes the extraction directory"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' path component (a non-canonical name)"
    return None
