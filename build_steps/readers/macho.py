"""Mach-O reading for the macOS wheel: slices, install name, load commands, rpaths, minimum OS.

Parsing is macholib's (the library delocate uses); this module only turns its load commands into
plain facts the gates judge. A file that is not Mach-O, or that macholib cannot parse, is a
:class:`NotMachOError` naming the file and what was wrong.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from macholib import mach_o
from macholib.MachO import MachO

from ..errors import NotMachOError

#: dylib-naming load commands -> the names otool -l prints for them.
LOAD_KINDS = {
    mach_o.LC_LOAD_DYLIB: "LC_LOAD_DYLIB",
    mach_o.LC_LOAD_WEAK_DYLIB: "LC_LOAD_WEAK_DYLIB",
    mach_o.LC_REEXPORT_DYLIB: "LC_REEXPORT_DYLIB",
    mach_o.LC_LOAD_UPWARD_DYLIB: "LC_LOAD_UPWARD_DYLIB",
    mach_o.LC_LAZY_LOAD_DYLIB: "LC_LAZY_LOAD_DYLIB",
}
_THIN_MAGICS = {mach_o.MH_MAGIC, mach_o.MH_CIGAM, mach_o.MH_MAGIC_64, mach_o.MH_CIGAM_64}
_FAT_MAGICS = {mach_o.FAT_MAGIC, mach_o.FAT_MAGIC_64}
#: macholib's cputype names -> the arch names lipo and wheel tags use (others: lower-cased).
_ARCH_NAMES = {"ARM64": "arm64", "ARM": "arm", "PowerPC": "ppc", "PowerPC64": "ppc64"}
_ARM64E_SUBTYPE = 2
# What macholib raises on a truncated or malformed file (it reads with struct, asserts, seeks).
_PARSE_ERRORS = (ValueError, struct.error, EOFError, KeyError, IndexError, AssertionError, TypeError,
                 OSError)  # macholib reports a read past the end of a truncated file as OSError


@dataclass
class Slice:
    """One architecture of a Mach-O file (a thin file has one)."""
    arch: str
    filetype: str                      # dylib, bundle, execute, object, ...
    install_id: str | None             # LC_ID_DYLIB
    loads: list[tuple[str, str]] = field(default_factory=list)   # [(kind, path)] in load-command order
    rpaths: list[str] = field(default_factory=list)  # LC_RPATH paths, in order
    platform: str | None = None        # LC_BUILD_VERSION platform ("macOS"), None for the old command
    min_os: str | None = None          # LC_BUILD_VERSION minos or LC_VERSION_MIN_MACOSX version
    sdk: str | None = None
    version_command: str | None = None  # which command min_os came from
    offset: int = 0                    # where the slice starts in the file (fat binaries)
    signature: tuple[int, int] | None = None     # LC_CODE_SIGNATURE (dataoff, datasize) within the slice

    @property
    def signed(self) -> bool:
        return self.signature is not None

    @property
    def load_paths(self) -> list[str]:
        return [path for _kind, path in self.loads]


@dataclass
class MachOInfo:
    path: str
    fat: bool
    slices: list[Slice]

    @property
    def archs(self) -> list[str]:
        return [s.arch for s in self.slices]

    def slice_for(self, arch: str) -> Slice | None:
        return next((s for s in self.slices if s.arch == arch), None)


def magic_of(path: str | Path) -> int | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    if len(head) < 8:
        return None
    magic: int = struct.unpack(">I", head[:4])[0]
    return magic


def is_macho(path: str | Path) -> bool:
    """True for a thin or fat Mach-O file (a fat header with a sane arch count, unlike a Java class)."""
    magic = magic_of(path)
    if magic in _THIN_MAGICS:
        return True
    if magic in _FAT_MAGICS:
        with open(path, "rb") as fh:
            fh.seek(4)
            count: int = struct.unpack(">I", fh.read(4))[0]
        return 0 < count < 32
    return False


def version_text(packed: int) -> str:
    """``0x000D0100`` -> ``13.1`` (xxxx.yy.zz nibbles; a zero patch level is left out)."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def _lc_string(data: object) -> str:
    raw = data if isinstance(data, bytes) else b""
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _arch(header: Any) -> str:  # a macholib MachOHeader
    cputype, subtype = int(header.header.cputype), int(header.header.cpusubtype) & 0xFFFFFF
    raw = str(mach_o.CPU_TYPE_NAMES.get(cputype, f"cputype-{cputype}"))
    name = _ARCH_NAMES.get(raw, raw.lower())
    return "arm64e" if name == "arm64" and subtype == _ARM64E_SUBTYPE else name


def _slice(header: Any) -> Slice:  # a macholib MachOHeader
    out = Slice(arch=_arch(header), filetype=header.filetype, install_id=None, offset=int(header.offset))
    for lc, cmd, data in header.commands:
        kind = lc.cmd
        if kind in LOAD_KINDS:
            out.loads.append((LOAD_KINDS[kind], _lc_string(data)))
        elif kind == mach_o.LC_ID_DYLIB:
            out.install_id = _lc_string(data)
        elif kind == mach_o.LC_RPATH:
            out.rpaths.append(_lc_string(data))
        elif kind == mach_o.LC_BUILD_VERSION:
            platform = mach_o.PLATFORM_NAMES.get(int(cmd.platform), str(int(cmd.platform)))
            # A zippered or multi-platform image lists several; the macOS one decides on a Mac.
            if out.min_os is None or platform == "macOS":
                out.platform, out.min_os, out.sdk = platform, version_text(int(cmd.minos)), version_text(int(cmd.sdk))
                out.version_command = "LC_BUILD_VERSION"
        elif kind == mach_o.LC_VERSION_MIN_MACOSX and out.min_os is None:
            out.platform, out.min_os = "macOS", version_text(int(cmd.version))
            out.sdk, out.version_command = version_text(int(cmd.sdk)), "LC_VERSION_MIN_MACOSX"
        elif kind == mach_o.LC_CODE_SIGNATURE:
            out.signature = (int(cmd.dataoff), int(cmd.datasize))
    return out


def section_spans(path: str | Path, segment: str, section: str) -> list[tuple[int, int]]:
    """``(file offset, size)`` of ``segment,section`` in every slice that has it (file data only)."""
    parsed = MachO(str(path), allow_unknown_load_commands=True)
    want_seg, want_sect = segment.encode(), section.encode()
    spans: list[tuple[int, int]] = []
    for header in parsed.headers:
        for lc, _cmd, data in header.commands:
            if lc.cmd not in (mach_o.LC_SEGMENT, mach_o.LC_SEGMENT_64):
                continue
            for sect in data:
                zerofill = (int(sect.flags) & mach_o.SECTION_TYPE) == mach_o.S_ZEROFILL
                if (sect.segname.rstrip(b"\0") == want_seg and sect.sectname.rstrip(b"\0") == want_sect
                        and not zerofill and int(sect.size)):
                    spans.append((header.offset + int(sect.offset), int(sect.size)))
    return spans


def find_strings(path: str | Path, pattern: bytes,
                 sections: tuple[tuple[str, str], ...] = (("__TEXT", "__cstring"),)) -> list[str]:
    """C string literals (``__TEXT,__cstring``, the Mach-O .rodata for strings) of every slice that
    ``pattern`` matches as a whole -- the commit stamp, as build_steps.readers.elf.find_strings reads it."""
    from .elf import strings_in_spans
    try:
        spans = [span for seg, sect in sections for span in section_spans(path, seg, sect)]
    except _PARSE_ERRORS as exc:
        raise NotMachOError(f"{Path(path).name}: cannot read its sections ({exc})") from None
    return sorted(set(strings_in_spans(path, pattern, spans)))


def read_macho(path: str | Path) -> MachOInfo:
    """Every slice of the Mach-O file at ``path``, read with macholib."""
    path = Path(path)
    if not is_macho(path):
        magic = magic_of(path)
        what = "an ELF file" if magic == 0x7F454C46 else f"magic {magic:#010x}" if magic is not None else "too short"
        raise NotMachOError(f"{path.name} is not a Mach-O file ({what})")
    try:
        parsed = MachO(str(path), allow_unknown_load_commands=True)
    except _PARSE_ERRORS as exc:
        raise NotMachOError(f"{path.name} is not a readable Mach-O file (truncated or corrupt: {exc}); "
                            "rebuild the wheel") from None
    return MachOInfo(path=str(path), fat=parsed.fat is not None, slices=[_slice(h) for h in parsed.headers])


# --- code signature -------------------------------------------------------------------------
# macholib locates the signature (LC_CODE_SIGNATURE) but does not read it; its layout is Apple's
# (xnu osfmk/kern/cs_blobs.h): a big-endian SuperBlob indexing blobs, among them CodeDirectories
# that hold one hash per page of the slice up to codeLimit.
_SUPERBLOB, _CODEDIRECTORY = 0xFADE0CC0, 0xFADE0C02
_HASHES = {1: ("sha1", 20), 2: ("sha256", 32), 3: ("sha256", 20), 4: ("sha384", 48)}


def signature_problem(path: str | Path, sl: Slice) -> str | None:
    """Why ``sl``'s code signature would not pass dyld's check, or None when every page hash of
    its CodeDirectory matches the slice's bytes. Ad-hoc signatures (codesign -s -, the linker's)
    are checked the same way: arm64 macOS enforces their page hashes too."""
    import hashlib
    if sl.signature is None:
        return "has no code signature (LC_CODE_SIGNATURE)"
    dataoff, datasize = sl.signature
    with open(path, "rb") as fh:
        fh.seek(sl.offset + dataoff)
        blob = fh.read(datasize)
        if len(blob) < 12 or struct.unpack(">I", blob[:4])[0] != _SUPERBLOB:
            return "has an LC_CODE_SIGNATURE that points at no signature (the file was cut or rewritten)"
        count = struct.unpack(">I", blob[8:12])[0]
        directories = []
        for i in range(min(count, 64)):
            _slot, off = struct.unpack(">II", blob[12 + 8 * i: 20 + 8 * i])
            if blob[off:off + 4] == struct.pack(">I", _CODEDIRECTORY):
                directories.append(off)
        if not directories:
            return "has a code signature without a CodeDirectory"
        for off in directories:
            (_m, _len, _version, _flags, hash_off, _ident, _special, n_code, code_limit, hash_size, hash_type,
             _platform, page_shift) = struct.unpack(">IIIIIIIIIBBBB", blob[off:off + 40])
            if hash_type not in _HASHES:
                continue
            algo, size = _HASHES[hash_type]
            if code_limit != dataoff:
                return (f"has a signature that covers {code_limit} bytes, but its code ends at {dataoff} "
                        "(the file was modified after it was signed)")
            page = 1 << page_shift if page_shift else code_limit
            bad = 0
            fh.seek(sl.offset)
            for n in range(n_code):
                data = fh.read(min(page, code_limit - n * page))
                want = blob[off + hash_off + n * hash_size: off + hash_off + (n + 1) * hash_size]
                bad += hashlib.new(algo, data).digest()[:size] != want
            if bad:
                return (f"has a code signature whose hashes do not match {bad} of its {n_code} pages "
                        "(the file was modified after it was signed)")
    return None
