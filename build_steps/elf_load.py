"""What the dynamic loader itself checks before it maps an ELF: machine, class, stack flags, text
relocations and the symbol versions it must find (DT_VERNEED).

Read the way ld.so reads them: from the program headers and the PT_DYNAMIC segment only, never
from section headers (a stripped or oddly linked library has none that matter; ld.so ignores
them). Every read is a small struct at a known offset, so a 1 GB libmxnet.so costs the same as
a 20 kB codec library. Malformed input is a :class:`build_steps.elf.NotElfError`, as in elf.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from elftools.common.utils import struct_parse

from .elf import NotElfError, _PARSE_ERRORS, _Opened, _program_headers

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
    version_needs: list = field(default_factory=list)

    @property
    def exec_stack(self) -> bool:
        return self.stack is None or "x" in self.stack


def _offset_of(loads: list, vaddr: int) -> int | None:
    """File offset of virtual address ``vaddr`` through the PT_LOAD segments, or None."""
    for ph in loads:
        if ph["p_vaddr"] <= vaddr < ph["p_vaddr"] + ph["p_filesz"]:
            return ph["p_offset"] + (vaddr - ph["p_vaddr"])
    return None


def _cstring(stream, offset: int, limit: int = 4096) -> str:
    stream.seek(offset)
    data = stream.read(limit)
    end = data.find(b"\x00")
    return (data if end < 0 else data[:end]).decode("utf-8", "replace")


def read_load_facts(path) -> LoadFacts:
    """The loader-relevant facts of one ELF file (see the module doc)."""
    with _Opened(path) as elf:
        try:
            return _read(elf)
        except NotElfError:
            raise
        except _PARSE_ERRORS as exc:
            raise NotElfError(
                f"{path} is not an ELF file (its program headers or dynamic segment cannot be read: "
                f"{exc}); rebuild it or download the wheel again") from exc


def _read(elf) -> LoadFacts:
    stack, dynamic, loads = None, None, []
    for ph in _program_headers(elf):
        kind = ph["p_type"]
        if kind == "PT_GNU_STACK":
            flags = ph["p_flags"]
            stack = "rw" + ("x" if flags & PF_X else "")
        elif kind == "PT_DYNAMIC":
            dynamic = ph
        elif kind == "PT_LOAD":
            loads.append(ph)
    facts = LoadFacts(elf_class=elf.elfclass, little_endian=elf.little_endian,
                      machine=str(elf["e_machine"]), elf_type=str(elf["e_type"]),
                      stack=stack, textrel=False)
    if dynamic is None:
        return facts
    entries = {}
    dyn = elf.structs.Elf_Dyn
    size = dyn.sizeof()
    for n in range(dynamic["p_filesz"] // size):
        entry = struct_parse(dyn, elf.stream, stream_pos=dynamic["p_offset"] + n * size)
        tag = entry["d_tag"]
        if tag == "DT_NULL":
            break
        entries.setdefault(tag, entry["d_val"])
    facts.textrel = "DT_TEXTREL" in entries or bool(entries.get("DT_FLAGS", 0) & DF_TEXTREL)
    facts.version_needs = _version_needs(elf, entries, loads)
    return facts


def _version_needs(elf, entries: dict, loads: list) -> list:
    if "DT_VERNEED" not in entries or "DT_STRTAB" not in entries:
        return []
    table = _offset_of(loads, entries["DT_VERNEED"])
    strtab = _offset_of(loads, entries["DT_STRTAB"])
    if table is None or strtab is None:
        raise NotElfError("DT_VERNEED or DT_STRTAB points outside every PT_LOAD segment")
    out = []
    count = entries.get("DT_VERNEEDNUM", 0)
    pos = table
    for _ in range(count):
        need = struct_parse(elf.structs.Elf_Verneed, elf.stream, stream_pos=pos)
        library = _cstring(elf.stream, strtab + need["vn_file"])
        aux = pos + need["vn_aux"]
        for _ in range(need["vn_cnt"]):
            vna = struct_parse(elf.structs.Elf_Vernaux, elf.stream, stream_pos=aux)
            out.append(VersionNeed(library, _cstring(elf.stream, strtab + vna["vna_name"]),
                                   bool(vna["vna_flags"] & VER_FLG_WEAK)))
            if not vna["vna_next"]:
                break
            aux += vna["vna_next"]
        if not need["vn_next"]:
            break
        pos += need["vn_next"]
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
