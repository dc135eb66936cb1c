"""What the dynamic loader itself checks before it maps an ELF: machine, class, stack flags, text
relocations and the symbol versions it must find (DT_VERNEED).

Read the way ld.so reads them: from the ELF header, the program headers and the PT_DYNAMIC segment
only, never from section headers (a stripped or oddly linked library has none that matter; ld.so
ignores them). Every read is a small struct at a known offset, so a 1 GB libmxnet.so costs the same
as a 20 kB codec library. Malformed or truncated input is a :class:`build_steps.errors.NotElfError`
whose message says which, as in elf.py.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from elftools.elf.enums import ENUM_E_MACHINE, ENUM_E_TYPE

from ..errors import NotElfError
from .elf import ELF_MAGIC

PF_X = 0x1
DF_TEXTREL = 0x4
#: vna_flags bit: the version is only wanted if present (ld.so does not fail without it).
VER_FLG_WEAK = 0x2


@dataclass
class VersionNeed:
    library: str        # the NEEDED file the version is looked up in (vn_file)
    version: str        # e.g. GLIBC_2.34
    weak: bool = False


@dataclass
class LoadFacts:
    elf_class: int                  # 32 or 64
    little_endian: bool
    machine: str                    # e_machine as pyelftools names it, e.g. EM_X86_64
    elf_type: str                   # ET_DYN, ET_EXEC ...
    #: "rw" or "rwx" from PT_GNU_STACK; None when the object has no PT_GNU_STACK (then the
    #: loader falls back to the architecture's default, which is an executable stack on x86_64)
    stack: str | None
    textrel: bool                   # DT_TEXTREL, or DF_TEXTREL in DT_FLAGS
    version_needs: list[VersionNeed] = field(default_factory=list)

    @property
    def exec_stack(self) -> bool:
        return self.stack is None or "x" in self.stack


def _offset_of(loads: list[dict[str, int]], vaddr: int) -> int | None:
    """File offset of virtual address ``vaddr`` through the PT_LOAD segments, or None."""
    for ph in loads:
        if ph["vaddr"] <= vaddr < ph["vaddr"] + ph["filesz"]:
            return ph["offset"] + (vaddr - ph["vaddr"])
    return None


def _cstring(stream: BinaryIO, offset: int, limit: int = 4096) -> str:
    stream.seek(offset)
    data = stream.read(limit)
    end = data.find(b"\x00")
    return (data if end < 0 else data[:end]).decode("utf-8", "replace")


def read_load_facts(path: Path | str) -> LoadFacts:
    """The loader-relevant facts of one ELF file (see the module doc)."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise NotElfError(f"{path} is not an ELF file (cannot open it: {exc.strerror})") from exc
    with fh:
        try:
            return _read(path, fh, os.fstat(fh.fileno()).st_size)
        except NotElfError as exc:
            raise NotElfError(f"{path} is not an ELF file ({exc}); rebuild it or download the wheel again") from None
        except (struct.error, ValueError, OSError) as exc:
            raise NotElfError(
                f"{path} is not an ELF file (its program headers or dynamic segment cannot be read: "
                f"{exc}); rebuild it or download the wheel again") from exc


# Everything is unpacked with the struct module, not pyelftools: building an ELFFile costs ~2 ms
# (it compiles its construct parsers per file) and each parsed record ~40 us; over the ~130
# libraries of a release closure that was 0.5 s of a 3 s audit for a dozen fields per file.
# pyelftools' enum tables still name the machine and type.
PT_LOAD, PT_DYNAMIC, PT_GNU_STACK = 1, 2, 0x6474E551
DT_NULL, DT_STRTAB, DT_TEXTREL, DT_FLAGS = 0, 5, 22, 30
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
_MACHINES = {v: k for k, v in ENUM_E_MACHINE.items() if k != "_default_"}
_TYPES = {v: k for k, v in ENUM_E_TYPE.items() if k != "_default_"}


def _layouts(elf_class: int, little: bool) -> dict[str, Any]:
    order = "<" if little else ">"
    if elf_class == 64:
        return {"ehdr": struct.Struct(order + "HHIQQQIHHHHHH"), "phdr": struct.Struct(order + "IIQQQQQQ"),
                "dyn": struct.Struct(order + "qQ"),
                "fields": ("type", "flags", "offset", "vaddr", "paddr", "filesz", "memsz", "align"),
                "verneed": struct.Struct(order + "HHIII"), "vernaux": struct.Struct(order + "IHHII")}
    return {"ehdr": struct.Struct(order + "HHIIIIIHHHHHH"), "phdr": struct.Struct(order + "IIIIIIII"),
            "dyn": struct.Struct(order + "iI"),
            "fields": ("type", "offset", "vaddr", "paddr", "filesz", "memsz", "flags", "align"),
            "verneed": struct.Struct(order + "HHIII"), "vernaux": struct.Struct(order + "IHHII")}


def _unpack(stream: BinaryIO, layout: struct.Struct, offset: int) -> tuple[int, ...]:
    stream.seek(offset)
    data = stream.read(layout.size)
    if len(data) < layout.size:
        raise NotElfError(f"a record at byte {offset} runs past the end of the file")
    return layout.unpack(data)


def _read(path: Path, stream: BinaryIO, size: int) -> LoadFacts:
    ident = stream.read(16)
    if ident[:4] != ELF_MAGIC:
        raise NotElfError(f"it starts with {ident[:4]!r}, not b'\\x7fELF'")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise NotElfError(f"unknown ELF class {ident[4]} or data encoding {ident[5]}")
    elf_class, little = 32 * ident[4], ident[5] == 1
    lay = _layouts(elf_class, little)
    (e_type, e_machine, _version, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum,
     _shentsize, _shnum, _shstrndx) = _unpack(stream, lay["ehdr"], 16)
    if phoff + phnum * phentsize > size or (phnum and phentsize < lay["phdr"].size):
        raise NotElfError(f"truncated: its program headers end at byte {phoff + phnum * phentsize} "
                          f"but the file has {size} bytes")
    stack: str | None = None
    dynamic: dict[str, int] | None = None
    loads: list[dict[str, int]] = []
    stream.seek(phoff)
    table = stream.read(phnum * phentsize)
    for n in range(phnum):
        ph = dict(zip(lay["fields"], lay["phdr"].unpack_from(table, n * phentsize)))
        if ph["offset"] + ph["filesz"] > size:
            raise NotElfError(f"truncated: a segment ends at byte {ph['offset'] + ph['filesz']} "
                              f"but the file has {size} bytes")
        if ph["type"] == PT_GNU_STACK:
            stack = "rw" + ("x" if ph["flags"] & PF_X else "")
        elif ph["type"] == PT_DYNAMIC:
            dynamic = ph
        elif ph["type"] == PT_LOAD:
            loads.append(ph)
    facts = LoadFacts(elf_class=elf_class, little_endian=little,
                      machine=_MACHINES.get(e_machine, str(e_machine)), elf_type=_TYPES.get(e_type, str(e_type)),
                      stack=stack, textrel=False)
    if dynamic is None:
        return facts
    entries: dict[int, int] = {}
    dyn = lay["dyn"]
    stream.seek(dynamic["offset"])
    data = stream.read(dynamic["filesz"])
    for n in range(len(data) // dyn.size):
        tag, value = dyn.unpack_from(data, n * dyn.size)
        if tag == DT_NULL:
            break
        entries.setdefault(tag, value)
    facts.textrel = DT_TEXTREL in entries or bool(entries.get(DT_FLAGS, 0) & DF_TEXTREL)
    facts.version_needs = _version_needs(stream, lay, entries, loads)
    return facts


def _version_needs(stream: BinaryIO, lay: dict[str, Any], entries: dict[int, int],
                   loads: list[dict[str, int]]) -> list[VersionNeed]:
    if DT_VERNEED not in entries or DT_STRTAB not in entries:
        return []
    table = _offset_of(loads, entries[DT_VERNEED])
    strtab = _offset_of(loads, entries[DT_STRTAB])
    if table is None or strtab is None:
        raise NotElfError("DT_VERNEED or DT_STRTAB points outside every PT_LOAD segment")
    out = []
    pos = table
    for _ in range(entries.get(DT_VERNEEDNUM, 0)):
        _version, count, vn_file, vn_aux, vn_next = _unpack(stream, lay["verneed"], pos)
        library = _cstring(stream, strtab + vn_file)
        aux = pos + vn_aux
        for _ in range(count):
            _hash, flags, _other, name, vna_next = _unpack(stream, lay["vernaux"], aux)
            out.append(VersionNeed(library, _cstring(stream, strtab + name), bool(flags & VER_FLG_WEAK)))
            if not vna_next:
                break
            aux += vna_next
        if not vn_next:
            break
        pos += vn_next
    return out


#: The ELF a wheel's platform tag promises: tag architecture -> (class, little endian, e_machine).
PLATFORM_ELF = {
    "x86_64": (64, True, "EM_X86_64"),
    "i686": (32, True, "EM_386"),
    "aarch64": (64, True, "EM_AARCH64"),
    "armv7l": (32, True, "EM_ARM"),
    "ppc64le": (64, True, "EM_PPC64"),
    "ppc64": (64, False, "EM_PPC64"),
    "s390x": (64, False, "EM_S390"),
    "riscv64": (64, True, "EM_RISCV"),
}


def platform_arch(tag: str) -> str | None:
    """The architecture of a platform tag (``linux_x86_64``, ``manylinux_2_28_aarch64``), or None."""
    for arch in sorted(PLATFORM_ELF, key=len, reverse=True):
        if tag.endswith("_" + arch):
            return arch
    return None
