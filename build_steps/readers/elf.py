"""Read-only ELF facts the gates need: dynamic entries, section spans, strings in sections.

Everything goes through pyelftools on an open file; nothing loads a whole section into memory,
because libmxnet.so is about 1 GB. A file that is not ELF, or an ELF cut short (a truncated
download, a failed copy), is a :class:`NotElfError` with a message saying which, never a
pyelftools traceback.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from pathlib import Path
from re import Pattern
from typing import Any, Literal

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.common.utils import struct_parse
from elftools.construct.core import ConstructError
from elftools.elf.elffile import ELFFile

from ..errors import NotElfError

ELF_MAGIC = b"\x7fELF"

# What pyelftools raises on malformed input, and nothing else (a bug of ours stays a traceback):
# its own ELFError (ELFParseError is one: struct_parse wraps construct's errors in it), construct's
# ConstructError where a parse is not wrapped, ValueError and OSError from seeking the file to an
# offset a garbled header gives (an offset past 2**63, a negative one). Found by reading 20000
# truncated and byte-flipped copies of system libraries through read_dynamic: nothing else escaped.
_PARSE_ERRORS = (ELFError, ELFParseError, ConstructError, ValueError, OSError)

# Chunk size for scanning section contents: big enough that Python overhead is negligible,
# small enough that peak memory stays flat on a 1 GB library.
_CHUNK = 8 << 20


def is_elf(path: Path | str) -> bool:
    """True when ``path`` starts with the ELF magic (says nothing about completeness)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ELF_MAGIC
    except OSError:
        return False


@dataclass
class DynamicInfo:
    needed: list[str]
    soname: str | None
    rpath: list[str] | None
    runpath: list[str] | None

    @property
    def search_tag(self) -> str | None:
        """The tag the dynamic loader uses: glibc ignores DT_RPATH when DT_RUNPATH is present."""
        if self.runpath is not None:
            return "RUNPATH"
        if self.rpath is not None:
            return "RPATH"
        return None

    @property
    def search_path(self) -> list[str]:
        if self.runpath is not None:
            return list(self.runpath)
        if self.rpath is not None:
            return list(self.rpath)
        return []


def _check_complete(path: Path, elf: ELFFile, size: int) -> None:
    """Raise NotElfError when the headers point past the end of the file (a truncated copy)."""
    hdr = elf.header
    sh_end = hdr["e_shoff"] + hdr["e_shnum"] * hdr["e_shentsize"]
    if hdr["e_shoff"] and sh_end > size:
        raise NotElfError(
            f"{path} is not an ELF file (truncated: its section header table ends at byte {sh_end} "
            f"but the file has {size} bytes); rebuild it or download the wheel again")
    ph_end = hdr["e_phoff"] + hdr["e_phnum"] * hdr["e_phentsize"]
    if hdr["e_phoff"] and ph_end > size:
        raise NotElfError(
            f"{path} is not an ELF file (truncated: its program headers end at byte {ph_end} "
            f"but the file has {size} bytes); rebuild it or download the wheel again")
    for phdr in _program_headers(elf):
        end = phdr["p_offset"] + phdr["p_filesz"]
        if end > size:
            raise NotElfError(
                f"{path} is not an ELF file (truncated: segment {phdr['p_type']} ends at byte {end} "
                f"but the file has {size} bytes); rebuild it or download the wheel again")


# The raw header tables. pyelftools' Section and Segment objects do more than a header read:
# a dynamic segment finds its string table by building every section, and each GNU hash section
# parses its table. Across the ~250 libraries of a release wheel's closure that was 0.5 s of a
# 3 s audit; the headers alone are what the checks below need.
def _program_headers(elf: ELFFile) -> Iterator[Any]:
    for n in range(elf.num_segments()):
        yield struct_parse(elf.structs.Elf_Phdr, elf.stream,
                           stream_pos=elf["e_phoff"] + n * elf["e_phentsize"])


def _dynamic_section(elf: ELFFile) -> Any:
    """The SHT_DYNAMIC section (the only Section object built), or None."""
    for n in range(elf.num_sections()):
        shdr = struct_parse(elf.structs.Elf_Shdr, elf.stream,
                            stream_pos=elf["e_shoff"] + n * elf["e_shentsize"])
        if shdr["sh_type"] == "SHT_DYNAMIC":
            return elf.get_section(n)
    return None


class _Opened:
    """Context manager: an ELFFile over ``path`` with headers checked for truncation."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __enter__(self) -> ELFFile:
        try:
            self.fh = open(self.path, "rb")
        except OSError as exc:
            raise NotElfError(f"{self.path} is not an ELF file (cannot open it: {exc.strerror})") from exc
        try:
            size = os.fstat(self.fh.fileno()).st_size
            magic = self.fh.read(4)
            self.fh.seek(0)
            if magic != ELF_MAGIC:
                raise NotElfError(
                    f"{self.path} is not an ELF file (it starts with {magic!r}, not b'\\x7fELF'); "
                    "a shared library was expected here: rebuild the wheel")
            try:
                elf = ELFFile(self.fh)
                _check_complete(self.path, elf, size)
            except NotElfError:
                raise
            except _PARSE_ERRORS as exc:
                raise NotElfError(
                    f"{self.path} is not an ELF file (malformed or truncated header: {exc}); "
                    "rebuild it or download the wheel again") from exc
            return elf
        except BaseException:
            self.fh.close()
            raise

    def __exit__(self, *exc: object) -> Literal[False]:
        self.fh.close()
        return False


def _split_path(value: str) -> list[str]:
    # ld.so splits on ':'; an empty element means the current directory, so keep it visible.
    return value.split(":") if value != "" else []


def read_dynamic(path: Path | str) -> DynamicInfo:
    """NEEDED (in order), SONAME, RPATH and RUNPATH of ``path`` (RPATH/RUNPATH None when absent)."""
    with _Opened(path) as elf:
        try:
            dynamic = _dynamic_section(elf)
            if dynamic is None:
                # Stripped of section headers: the loader only needs PT_DYNAMIC anyway.
                for n, phdr in enumerate(_program_headers(elf)):
                    if phdr["p_type"] == "PT_DYNAMIC":
                        dynamic = elf.get_segment(n)
                        break
            needed: list[str] = []
            soname: str | None = None
            rpath: list[str] | None = None
            runpath: list[str] | None = None
            if dynamic is not None:
                for tag in dynamic.iter_tags():
                    kind = tag.entry.d_tag
                    if kind == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif kind == "DT_SONAME":
                        soname = tag.soname
                    elif kind == "DT_RPATH":
                        rpath = (rpath or []) + _split_path(tag.rpath)
                    elif kind == "DT_RUNPATH":
                        runpath = (runpath or []) + _split_path(tag.runpath)
                    elif kind == "DT_NULL":
                        break
        except NotElfError:
            raise
        except _PARSE_ERRORS as exc:
            raise NotElfError(
                f"{path} is not an ELF file (its dynamic section cannot be read: {exc}); "
                "rebuild it or download the wheel again") from exc
    return DynamicInfo(needed=needed, soname=soname, rpath=rpath, runpath=runpath)


_ORIGIN_RE = re.compile(r"\$(?:ORIGIN\b|\{ORIGIN\})")


def uses_origin(entry: str) -> bool:
    """True when a search-path entry is relative to the object's own directory."""
    return bool(_ORIGIN_RE.search(entry))


def normalize_origin(entry: str) -> str:
    """``${ORIGIN}`` written as ``$ORIGIN`` (ld.so reads both as the same token), so entries
    compare equal whichever spelling the linker or patchelf wrote."""
    return _ORIGIN_RE.sub("$ORIGIN", entry)


def expand_origin(entry: str, origin_dir: Path | str) -> Path:
    """The directory an RPATH/RUNPATH entry names, ``$ORIGIN`` and ``${ORIGIN}`` alike."""
    return Path(os.path.normpath(_ORIGIN_RE.sub(lambda _m: str(origin_dir), entry)))


_SHT_NOBITS = 8


def section_span(path: Path | str, name: str) -> tuple[int, int] | None:
    """``(file offset, size)`` of section ``name``, or None when absent (or without file data).

    Read with struct from the section header table and its string table only: the audit asks
    every ELF of the wheel for its ``.nv_fatbin``, and building a pyelftools ELFFile per file
    (~2 ms) was most of that cost across ~250 libraries.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            ident = fh.read(64)
            if ident[:4] != ELF_MAGIC:
                raise NotElfError(f"{path} is not an ELF file (it starts with {ident[:4]!r}, not b'\\x7fELF'); "
                                  "a shared library was expected here: rebuild the wheel")
            if len(ident) < 52 or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                raise NotElfError(f"{path} is not an ELF file (malformed or truncated header); "
                                  "rebuild it or download the wheel again")
            wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
            if wide:
                shoff, = struct.unpack_from(order + "Q", ident, 0x28)
                shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x3A)
                shdr = struct.Struct(order + "IIQQQQIIQQ")
            else:
                shoff, = struct.unpack_from(order + "I", ident, 0x20)
                shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x2E)
                shdr = struct.Struct(order + "IIIIIIIIII")
            if not shoff or not shnum:
                return None
            end = shoff + shnum * shentsize
            if end > size or shentsize < shdr.size or shstrndx >= shnum:
                raise NotElfError(
                    f"{path} is not an ELF file (truncated: its section header table ends at byte {end} "
                    f"but the file has {size} bytes); rebuild it or download the wheel again")
            fh.seek(shoff)
            table = fh.read(shnum * shentsize)
            headers = [shdr.unpack_from(table, i * shentsize) for i in range(shnum)]
            # (name, type, flags, addr, offset, size, ...) in both classes
            strtab = headers[shstrndx]
            fh.seek(strtab[4])
            names = fh.read(strtab[5])
            want = name.encode()
            for h in headers:
                end = names.find(b"\x00", h[0])
                if names[h[0]:end if end >= 0 else None] == want:
                    if h[1] == _SHT_NOBITS:
                        return None
                    return h[4], h[5]
            return None
    except OSError as exc:
        raise NotElfError(f"{path} is not an ELF file (cannot open it: {exc.strerror})") from exc


def find_strings(path: Path | str, pattern: bytes, sections: Iterable[str] = (".rodata",)) -> list[str]:
    """NUL-terminated strings in ``sections`` that ``pattern`` (a bytes regex) matches as a whole.

    The pattern is matched against complete strings (no anchors needed). Sections are read in
    chunks, so a 1 GB library costs a few MB of memory.
    """
    spans = []
    for name in sections:
        span = section_span(path, name)
        if span is not None:
            spans.append(span)
    return strings_in_spans(path, pattern, spans)


def strings_in_spans(path: Path | str, pattern: bytes, spans: Iterable[tuple[int, int]]) -> list[str]:
    """NUL-terminated strings in the file regions ``spans`` ((offset, size) pairs, any object
    format) that ``pattern`` matches as a whole."""
    regex = re.compile(pattern)
    # Anchoring the search on the NUL that ends the previous string lets the regex engine skip
    # most positions quickly: 4x faster than trying the pattern at every byte (100 MB of .rodata
    # in ~0.4 s instead of ~1.9 s).
    bounded = re.compile(rb"\x00(" + regex.pattern + rb")(?=\x00)", regex.flags)
    found: list[str] = []
    with open(path, "rb") as fh:
        for offset, size in spans:
            fh.seek(offset)
            remaining = size
            carry = b"\x00"  # the section's start begins a string, like a NUL would
            while remaining > 0:
                block = fh.read(min(_CHUNK, remaining))
                if not block:
                    break
                remaining -= len(block)
                data = carry + block
                cut = data.rfind(b"\x00")
                if cut <= 0:
                    carry = data  # no string ended in this block yet
                    continue
                _match_strings(data[:cut + 1], bounded, regex, found)
                carry = data[cut:]  # keep the NUL: it starts the next string
            if len(carry) > 1:
                _match_strings(carry + b"\x00", bounded, regex, found)  # the section's end ends it
    return found


def _match_strings(data: bytes, bounded: Pattern[bytes], regex: Pattern[bytes], found: list[str]) -> None:
    # ``data`` starts and ends with NUL; every hit of ``bounded`` is a NUL-delimited string, but
    # a pattern that can match NUL itself could span strings: check each hit is one whole string.
    for m in bounded.finditer(data):
        string = m.group(1)
        if b"\x00" not in string and regex.fullmatch(string):
            found.append(string.decode("utf-8", "replace"))
