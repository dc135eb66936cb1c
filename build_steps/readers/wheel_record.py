"""RECORD: parse a wheel's RECORD and check every member against it.

The extraction (:mod:`build_steps.readers.wheel`) hashes each member while writing it; this module reads
RECORD before that and compares afterwards. Mismatches are collected as problems (the RECORD gate
reports them), never raised: a wheel with a stale RECORD is still worth auditing.
"""
from __future__ import annotations

import base64
import csv
import io
import re
from collections.abc import Iterable, Mapping

from .wheel_name import unsafe_reason

# Hash algorithms RECORD may use that we accept (the wheel spec forbids md5 and sha1).
RECORD_ALGOS = ("sha256", "sha384", "sha512")
SIGNATURE_FILES = ("RECORD.jws", "RECORD.p7s")  # excluded from RECORD by the wheel spec


def b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def parse_record(text: str, problems: list[str]) -> dict[str, tuple[str, str]]:
    """RECORD rows as {path: (hash or '', size or '')}; malformed rows become problems."""
    rows: dict[str, tuple[str, str]] = {}
    try:
        reader = csv.reader(io.StringIO(text))
        for lineno, row in enumerate(reader, 1):
            if not row:
                continue
            if len(row) != 3:
                problems.append(f"RECORD line {lineno}: expected 3 fields (path,hash,size), got {row!r}")
                continue
            path, digest, size = row
            if path in rows:
                problems.append(f"RECORD lists {path!r} twice")
            rows[path] = (digest, size)
    except csv.Error as exc:
        problems.append(f"RECORD is not valid CSV ({exc})")
    return rows


def record_algo(entry: tuple[str, str] | None) -> str:
    digest = entry[0] if entry else ""
    algo = digest.split("=", 1)[0] if "=" in digest else ""
    return algo if algo in RECORD_ALGOS else "sha256"


def find_record(names: list[str]) -> str | None:
    records = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)]
    return records[0] if len(records) == 1 else None


def verify_record(record_name: str, rows: Mapping[str, tuple[str, str]], names: Iterable[str],
                  hashes: Mapping[str, str], sizes: Mapping[str, int], problems: list[str]) -> None:
    dist_info = record_name.rsplit("/", 1)[0]
    present = set(names)
    for name in names:
        if name == record_name:
            continue
        if name in (f"{dist_info}/{s}" for s in SIGNATURE_FILES):
            continue
        entry = rows.get(name)
        if entry is None:
            problems.append(f"{name} is in the wheel but not listed in RECORD "
                            "(unverifiable content: rebuild the wheel so RECORD covers it)")
            continue
        digest, size = entry
        if not digest:
            problems.append(f"{name} is listed in RECORD without a hash")
        elif "=" not in digest or digest.split("=", 1)[0] not in RECORD_ALGOS:
            problems.append(f"{name}: RECORD hash {digest!r} is not sha256 (or stronger)")
        elif digest != hashes[name]:
            problems.append(f"{name}: content does not match RECORD (RECORD {digest}, wheel "
                            f"{hashes[name]}): the file was changed after the wheel was built; "
                            "rebuild the wheel instead of editing it")
        if size != "" and size != str(sizes[name]):
            problems.append(f"{name}: RECORD says {size} bytes, the wheel has {sizes[name]}")
        elif size == "" and digest:
            problems.append(f"{name} is listed in RECORD without a size")
    for path in rows:
        if path == record_name:
            continue
        if path not in present:
            reason = unsafe_reason(path)
            extra = f" (and its name has {reason})" if reason else ""
            problems.append(f"RECORD lists {path!r}, which is not in the wheel{extra}")
    own = rows.get(record_name)
    if own is None:
        problems.append(f"RECORD does not list itself ({record_name})")
    elif own[0] or own[1]:
        problems.append(f"RECORD lists itself with a hash or size ({own[0]!r}, {own[1]!r}); "
                        "its own row must leave both empty")
