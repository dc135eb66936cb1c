"""METADATA and WHEEL of an extracted wheel: parsed, and checked against the wheel's file name.

Problems land in ``ExtractedWheel.metadata_problems`` (the metadata gates report them).
"""
from __future__ import annotations

import email.message
import email.parser
from pathlib import Path
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


class WheelParts(Protocol):
    """What these checks read and fill in of an ExtractedWheel (build_steps.readers.wheel, which
    imports this module: named here by shape, not imported back)."""
    distribution: str
    version: Version
    members: list[str]
    dist_info: str | None
    metadata: email.message.Message | None
    wheel_info: email.message.Message | None
    requires_dist: list[Requirement]
    metadata_problems: list[str]

    def file(self, member: str) -> Path: ...

    def has(self, member: str) -> bool: ...


def read_metadata(ew: WheelParts) -> None:
    problems = ew.metadata_problems
    top = sorted({m.split("/", 1)[0] for m in ew.members if "/" in m})
    dist_infos = [d for d in top if d.endswith(".dist-info")]
    if len(dist_infos) != 1:
        problems.append(f"expected exactly one .dist-info directory, found {dist_infos or 'none'}")
        if not dist_infos:
            return
    dist_info = ew.dist_info = dist_infos[0]
    stem = dist_info[: -len(".dist-info")]
    name_part, _, version_part = stem.rpartition("-")
    if canonicalize_name(name_part) != ew.distribution:
        problems.append(f"{ew.dist_info} names distribution {name_part!r}, the file name "
                        f"{ew.distribution!r}")
    try:
        if Version(version_part) != ew.version:
            problems.append(f"{ew.dist_info} has version {version_part}, the file name {ew.version}")
    except InvalidVersion:
        problems.append(f"{ew.dist_info}: {version_part!r} is not a PEP 440 version")

    ew.wheel_info = parse_headers(ew, f"{ew.dist_info}/WHEEL", problems)
    meta = parse_headers(ew, f"{ew.dist_info}/METADATA", problems)
    ew.metadata = meta
    if meta is None:
        return
    for line in meta.get_all("Requires-Dist") or []:
        try:
            ew.requires_dist.append(Requirement(line))
        except InvalidRequirement as exc:
            problems.append(f"METADATA Requires-Dist {line!r} is not a valid requirement ({exc})")
    name = meta.get("Name")
    if name is None or canonicalize_name(name) != ew.distribution:
        problems.append(f"METADATA Name {name!r} does not match the file name {ew.distribution!r}")
    mversion = meta.get("Version")
    try:
        if mversion is None or Version(mversion) != ew.version:
            problems.append(f"METADATA Version {mversion!r} does not match the file name {ew.version}")
    except InvalidVersion:
        problems.append(f"METADATA Version {mversion!r} is not a PEP 440 version")


def parse_headers(ew: WheelParts, member: str, problems: list[str]) -> email.message.Message | None:
    if not ew.has(member):
        problems.append(f"the wheel has no {member}")
        return None
    try:
        text = ew.file(member).read_text("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{member} is not UTF-8 text")
        return None
    return email.parser.Parser().parsestr(text)
