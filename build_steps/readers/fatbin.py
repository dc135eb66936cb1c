"""List the GPU code a library carries, from its ``.nv_fatbin`` section's headers alone.

Layout (docs/background.md): the section is a run of containers at 8-byte-aligned offsets,
each a 16-byte header (magic 0xBA55ED50, version, header size, size of the entries that follow)
and a run of entries, each with a variable-size header (kind, header size, padded payload size,
flags, PTX/code version, SM number). We read only those headers with ``os.pread`` — no payload,
no decompression, no cuobjdump — so a 1 GB libmxnet.so is walked in well under a second and the
process's memory does not grow with the section (an mmap would count every touched page).
"""
from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .elf import section_span
from ..errors import FatbinError

CONTAINER_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")          # magic, version, header size, fat size
_ENTRY = struct.Struct("<HHIQIIHHIIIQ")      # kind, version, hdr size, padded size, compressed size,
                                             # options offset, minor, major, arch, id off, id len, flags
_ENTRY_MIN_HEADER = _ENTRY.size            # 48: up to the flags word; real headers are >= 64

KIND_PTX = 1
KIND_SASS = 2

FLAG_ZLIB = 0x1000       # older toolkits
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000   # sm_90a / sm_100a / sm_120a
FLAG_FAMILY = 0x200000          # sm_100f / compute_120f


@dataclass(frozen=True)
class FatbinEntry:
    container: int
    kind: str               # "sass" | "ptx"
    arch: int               # SM number: 80, 86, ..., 120
    variant: str            # "" | "a" | "f"
    version: tuple[int, int]  # (major, minor): PTX ISA for PTX; cubin code version for SASS
    compressed: bool
    compression: str        # "" | "lz4" | "zstd" | "zlib" | "unknown"
    offset: int             # file offset of the payload
    size: int               # payload bytes stored (padded; compressed when compressed)

    @property
    def name(self) -> str:
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.arch}{self.variant}"


@dataclass
class FatbinReport:
    containers: int
    entries: list[FatbinEntry]
    section_offset: int = 0
    section_size: int = 0
    #: bytes between containers that were neither a container nor zero padding
    skipped_bytes: int = 0
    #: entries of kinds other than PTX/SASS (skipped, counted)
    other_entries: int = 0
    #: per container: number of entries (containers without any SASS are listed too)
    container_entry_counts: list[int] = field(default_factory=list)

    @property
    def sass_archs(self) -> set[int]:
        return {e.arch for e in self.entries if e.kind == "sass"}

    @property
    def ptx_archs(self) -> set[int]:
        return {e.arch for e in self.entries if e.kind == "ptx"}

    @property
    def sass_names(self) -> list[str]:
        return sorted({e.name for e in self.entries if e.kind == "sass"}, key=_name_key)

    @property
    def ptx_names(self) -> list[str]:
        return sorted({e.name for e in self.entries if e.kind == "ptx"}, key=_name_key)

    @property
    def ptx_versions(self) -> set[tuple[int, int]]:
        return {e.version for e in self.entries if e.kind == "ptx"}

    def container_sass(self) -> dict[int, set[int]]:
        """container index -> set of SASS arch numbers it carries (only containers with SASS)."""
        per: dict[int, set[int]] = {}
        for e in self.entries:
            if e.kind == "sass":
                per.setdefault(e.container, set()).add(e.arch)
        return per

    def containers_missing(self, sass_required: Iterable[int]) -> list[int]:
        """Containers that carry SASS but lack one of ``sass_required`` (arch numbers).

        A container with no SASS at all (e.g. PTX only) is not counted here: whether PTX alone
        is acceptable is the PTX gate's question.
        """
        required = set(sass_required)
        return sorted(c for c, archs in self.container_sass().items() if not required <= archs)

    def histogram(self) -> dict[str, int]:
        """name -> number of containers carrying it (a per-container view of the union)."""
        counts: Counter[str] = Counter()
        seen: set[tuple[int, str]] = set()
        for e in self.entries:
            key = (e.container, e.name)
            if key not in seen:
                seen.add(key)
                counts[e.name] += 1
        return dict(sorted(counts.items(), key=lambda kv: _name_key(kv[0])))

    def to_json(self) -> dict[str, Any]:
        """A JSON-able summary (for ``--provenance-json``)."""
        compression = Counter(e.compression or "none" for e in self.entries)
        return {
            "containers": self.containers,
            "entries": len(self.entries),
            "sass": self.sass_names,
            "ptx": self.ptx_names,
            "sass_archs": sorted(self.sass_archs),
            "ptx_archs": sorted(self.ptx_archs),
            "ptx_versions": [f"{a}.{b}" for a, b in sorted(self.ptx_versions)],
            "containers_with_sass": len(self.container_sass()),
            "per_arch_containers": self.histogram(),
            "compression": dict(compression),
            "section_offset": self.section_offset,
            "section_size": self.section_size,
            "skipped_bytes": self.skipped_bytes,
            "other_entries": self.other_entries,
        }


def _name_key(name: str) -> tuple[str, int, str]:
    prefix, _, rest = name.partition("_")
    digits = "".join(ch for ch in rest if ch.isdigit())
    return (prefix, int(digits or 0), rest)


def _compression(flags: int) -> str:
    if flags & FLAG_ZSTD:
        return "zstd"
    if flags & FLAG_LZ4:
        return "lz4"
    if flags & FLAG_ZLIB:
        return "zlib"
    return ""


def read_fatbin(elf_path: Path | str) -> FatbinReport | None:
    """The fatbin entries of ``elf_path``; None when it has no ``.nv_fatbin`` section."""
    span = section_span(elf_path, ".nv_fatbin")
    if span is None:
        return None
    base, size = span
    fd = os.open(elf_path, os.O_RDONLY)
    try:
        if os.fstat(fd).st_size < base + size:
            raise FatbinError(f"{elf_path}: .nv_fatbin (file offset {base:#x}, {size} bytes) runs past "
                              "the end of the file: the library is truncated; rebuild it")
        return _walk(fd, elf_path, base, size)
    finally:
        os.close(fd)


def _walk(fd: int, path: Path | str, base: int, size: int) -> FatbinReport:
    entries: list[FatbinEntry] = []
    counts: list[int] = []
    skipped = 0
    other = 0
    pos = 0
    containers = 0
    while pos + _CONTAINER.size <= size:
        head = os.pread(fd, _CONTAINER.size, base + pos)
        magic, version, hdr_size, fat_size = _CONTAINER.unpack(head)
        if magic != CONTAINER_MAGIC:
            # Containers are 8-aligned and may be separated by padding: step on.
            if head[:8] != b"\0" * 8:
                skipped += 8
            pos += 8
            continue
        where = f"{path}: .nv_fatbin container {containers} at section offset {pos:#x} (file offset {base + pos:#x})"
        if hdr_size < _CONTAINER.size:
            raise FatbinError(f"{where}: header size {hdr_size} is below 16; the section is malformed")
        end = pos + hdr_size + fat_size
        if end > size:
            raise FatbinError(f"{where}: declares {fat_size} bytes of entries, past the section's end "
                              f"({size} bytes); the library is truncated or corrupt: rebuild it")
        n = 0
        epos = pos + hdr_size
        while epos + _ENTRY_MIN_HEADER <= end:
            raw = os.pread(fd, _ENTRY.size, base + epos)
            (kind, _ever, ehdr, padded, _csize, _opts, minor, major, arch, _ido, _idl,
             flags) = _ENTRY.unpack(raw)
            ewhere = f"{where}, entry at section offset {epos:#x}"
            if ehdr < _ENTRY_MIN_HEADER:
                if kind == 0 and ehdr == 0 and padded == 0:
                    break  # zero padding at a container's tail
                raise FatbinError(f"{ewhere}: entry header size {ehdr} is too small; the section is malformed")
            nxt = epos + ehdr + padded
            if nxt > end:
                raise FatbinError(f"{ewhere}: entry of {ehdr}+{padded} bytes runs past its container's "
                                  "end; the section is malformed or truncated: rebuild the library")
            if kind in (KIND_PTX, KIND_SASS):
                variant = "a" if flags & FLAG_ARCH_SPECIFIC else ("f" if flags & FLAG_FAMILY else "")
                comp = _compression(flags)
                entries.append(FatbinEntry(
                    container=containers, kind="ptx" if kind == KIND_PTX else "sass", arch=arch,
                    variant=variant, version=(major, minor), compressed=bool(comp),
                    compression=comp, offset=base + epos + ehdr, size=padded))
                n += 1
            else:
                other += 1
            epos = nxt
        counts.append(n)
        containers += 1
        pos = end
        pos += (-pos) % 8
    if containers == 0 and size:
        raise FatbinError(f"{path}: .nv_fatbin (file offset {base:#x}, {size} bytes) holds no fatbin "
                          f"container (no 0x{CONTAINER_MAGIC:08X} magic at any 8-byte offset); "
                          "the section is malformed: rebuild the library")
    return FatbinReport(containers=containers, entries=entries, section_offset=base,
                        section_size=size, skipped_bytes=skipped, other_entries=other,
                        container_entry_counts=counts)
