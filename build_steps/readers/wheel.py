"""Extract a wheel once, safely, verifying RECORD while extracting.

Every gate reads from one extraction. The wheel may be ~1 GB (libmxnet.so), so each member is
read once: the compressed bytes are inflated, hashed and written in one streamed pass, with the
inflating in a helper thread for big members so that hashing and writing overlap it (zlib,
hashlib and file writes all release the GIL). Peak memory stays at a few chunks.

Unsafe or broken archives are refused before anything lands at ``dest``: the extraction goes into
a temporary directory beside ``dest`` and is renamed into place only when complete. RECORD is
checked in :mod:`build_steps.readers.wheel_record`, METADATA in :mod:`build_steps.readers.wheel_metadata`, the
file and member names in :mod:`build_steps.readers.wheel_name`.
"""
from __future__ import annotations

import email.message
import hashlib
import io
import os
import queue
import shutil
import stat
import struct
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from packaging.requirements import Requirement
from packaging.version import Version

from ..errors import REBUILD_WHEEL as _AGAIN, HeaderMismatch, WheelError
from .wheel_metadata import read_metadata
from .wheel_name import parse_wheel_name, unsafe_reason
from .wheel_record import b64, find_record, parse_record, record_algo, verify_record

try:  # a faster inflate when the host has it; stdlib zlib otherwise (same API, same results)
    from zlib_ng import zlib_ng as _inflate_lib  # type: ignore[import-not-found,unused-ignore]  # optional, often absent
except ImportError:  # pragma: no cover - depends on the environment
    try:
        from isal import isal_zlib as _inflate_lib  # type: ignore[no-redef,unused-ignore]  # one name, three modules
    except ImportError:
        import zlib as _inflate_lib  # type: ignore[no-redef,unused-ignore]  # the same API as the two above
import zlib

#: ISA-L's igzip_lib, or None: Any, as the module or None (the callers check it before use)
_igzip: Any
try:  # ISA-L's inflater also computes the CRC-32 of what it inflates, in the same pass
    from isal import igzip_lib as _igzip
except ImportError:  # pragma: no cover - depends on the environment
    _igzip = None

# Compressed bytes read per step, and the most inflated bytes produced per step (also a guard
# against a member that inflates far beyond its declared size).
_READ = 1 << 20
_OUT = 1 << 20
# Members below this compressed size are done inline; a thread costs more than it saves.
_THREAD_MIN = 1 << 20
# Inflating in one thread while hashing and writing in another needs a second core: on an idle
# 2-core machine the threads (this pipeline and the background member below) extract the 900 MB
# benchmark wheel in 1.7 s against 2.7 s inline (2026-12-03, isal); on a 2-core machine that is
# busy with other work threads were slower (bench/bench_audit.py).
# MXNET_HARNESS_EXTRACT_THREADS=0/1 forces the choice.
_PIPELINE = {"0": False, "1": True}.get(os.environ.get("MXNET_HARNESS_EXTRACT_THREADS", ""),
                                        len(os.sched_getaffinity(0)) >= 2)
_QUEUE_DEPTH = 4

@dataclass
class ExtractedWheel:
    path: Path
    root: Path
    filename: str
    distribution: str
    version: Version
    tags: frozenset[str]
    build_tag: tuple[()] | tuple[int, str]
    members: list[str]
    record_problems: list[str]
    dist_info: str | None
    metadata: email.message.Message | None
    requires_dist: list[Requirement]
    metadata_problems: list[str] = field(default_factory=list)
    #: member -> "sha256=<urlsafe b64>" of what was extracted
    hashes: dict[str, str] = field(default_factory=dict)
    #: member -> size in bytes
    sizes: dict[str, int] = field(default_factory=dict)
    #: WHEEL file (Wheel-Version, Root-Is-Purelib, Tag...) or None
    wheel_info: email.message.Message | None = None

    def file(self, member: str) -> Path:
        """Path of an extracted member; WheelError when the wheel has no such member."""
        if member not in self._member_set:
            raise WheelError(f"{self.filename} has no member {member!r}")
        return self.root / member

    def has(self, member: str) -> bool:
        return member in self._member_set

    def members_under(self, prefix: str) -> list[str]:
        """Members inside directory ``prefix`` (``"mxnet/lib"`` or ``"mxnet/lib/"``)."""
        prefix = prefix.rstrip("/") + "/"
        return [m for m in self.members if m.startswith(prefix)]

    @property
    def _member_set(self) -> frozenset[str]:
        cached = self.__dict__.get("_members_cache")
        if cached is None or cached[0] != len(self.members):
            cached = (len(self.members), frozenset(self.members))
            self.__dict__["_members_cache"] = cached
        members: frozenset[str] = cached[1]
        return members


# ---------------------------------------------------------------------------------------------
# member names

def _is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return stat.S_ISLNK(mode) if mode else False


def _check_names(wheel: Path, infos: list[zipfile.ZipInfo]) -> None:
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        reason = unsafe_reason(name)
        if reason:
            raise WheelError(
                f"{wheel.name}: member {name!r} has {reason}; refusing to extract this wheel "
                f"(nothing was written). The wheel is malformed or tampered with: {_AGAIN}")
        if _is_symlink(info):
            raise WheelError(
                f"{wheel.name}: member {name!r} is a symbolic link; wheels must not contain links "
                f"(pip would install a copy, and a link can point outside the package). "
                f"Nothing was written; {_AGAIN} with real files instead of links")
        if info.flag_bits & 0x1:
            raise WheelError(f"{wheel.name}: member {name!r} is encrypted (pip cannot read it: zipfile "
                             f"asks for a password); nothing was written; {_AGAIN} without encryption")
        key = name.rstrip("/")
        if key in seen:
            raise WheelError(
                f"{wheel.name}: member {name!r} appears twice in the archive (which copy would be "
                f"installed is undefined); nothing was written; {_AGAIN}")
        seen.add(key)


# ---------------------------------------------------------------------------------------------
# streaming one member

def _corrupt(wheel: Path, name: str, what: str) -> WheelError:
    return WheelError(
        f"{wheel.name}: member {name!r} is corrupt ({what}); the wheel is truncated or damaged: "
        f"{_AGAIN}. Nothing was extracted")


def _data_offset(fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo) -> int:
    """Where ``info``'s data starts, after checking that its local file header says what its
    central-directory entry says (see :func:`_header_disagreement`)."""
    fh.seek(info.header_offset)
    head = fh.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise _corrupt(wheel, info.filename, f"no local file header at byte {info.header_offset}")
    name_len: int
    extra_len: int
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    tail = fh.read(name_len + extra_len)
    why = _header_disagreement(fh, info, head, tail[:name_len], tail[name_len:])
    if why:
        raise HeaderMismatch(wheel, info, why)
    return info.header_offset + 30 + name_len + extra_len


_ZIP64 = 0xFFFFFFFF


def _local_zip64_sizes(extra: bytes) -> tuple[int, int] | None:
    """(uncompressed, compressed) from a local header's ZIP64 extra field, or None."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        if tag == 0x0001 and size >= 16:
            usize: int
            csize: int
            usize, csize = struct.unpack_from("<QQ", extra, pos + 4)
            return usize, csize
        pos += 4 + size
    return None


def _header_disagreement(fh: BinaryIO, info: zipfile.ZipInfo, head: bytes, raw_name: bytes, extra: bytes) -> str | None:
    """Why the local header (``head``: its fixed 30 bytes) differs from ``info`` (the central
    directory's entry), else None: name, compression method, CRC-32 and both sizes, as zipfile
    compares the name and as a streaming reader would use all of them. With bit 3 set the CRC and
    sizes are in the data descriptor after the data, which is read instead."""
    flags, method = struct.unpack_from("<HH", head, 6)
    crc, csize, usize = struct.unpack_from("<III", head, 14)
    name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
    if name != info.orig_filename:
        return f"the local header names it {name!r}, the central directory {info.orig_filename!r}"
    if method != info.compress_type:
        return f"compression method {method} in the local header, {info.compress_type} in the central directory"
    if flags & 0x08:
        fh.seek(info.header_offset + 30 + len(raw_name) + len(extra) + info.compress_size)
        desc = fh.read(24)
        if desc[:4] == b"PK\x07\x08":
            desc = desc[4:]
        wide = info.file_size >= _ZIP64 or info.compress_size >= _ZIP64
        if len(desc) < (20 if wide else 12):
            return "the data descriptor after the data is missing"
        crc, csize, usize = struct.unpack_from("<IQQ" if wide else "<III", desc)
    elif csize == _ZIP64 or usize == _ZIP64:
        sizes = _local_zip64_sizes(extra)
        if sizes is None:
            return "the local header's ZIP64 sizes are missing"
        usize, csize = sizes
    if crc != info.CRC:
        return f"CRC-32 {crc:08x} in the local header, {info.CRC:08x} in the central directory"
    if (csize, usize) != (info.compress_size, info.file_size):
        return (f"sizes {csize} stored / {usize} inflated in the local header, {info.compress_size} / "
                f"{info.file_size} in the central directory")
    return None


def check_archive(wheel: Path) -> None:
    """Everything about the archive that the headers alone tell, before anything is extracted:
    safe member names, no links, no encryption, no duplicates (:func:`_check_names`), no member
    over the compression-ratio cap (:func:`check_ratios`), and every member's local file header
    matching its central-directory entry (:class:`HeaderMismatch`). Reads only the headers: a few
    hundred small reads on a release wheel. What needs the bytes inflated (the CRC-32s) is found
    by :func:`extract_wheel`."""
    wheel = Path(wheel)
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise WheelError(f"{wheel.name} is not a readable zip archive ({exc}); it is truncated "
                         f"or corrupt: {_AGAIN}") from exc
    with zf, open(wheel, "rb") as fh:
        infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
        _check_names(wheel, infos)
        check_ratios(wheel, infos)
        for info in infos:
            _data_offset(fh, wheel, info)


def _raw_chunks(fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo, offset: int) -> Iterator[bytes]:
    fh.seek(offset)
    remaining = info.compress_size
    while remaining:
        chunk = fh.read(min(_READ, remaining))
        if not chunk:
            raise _corrupt(wheel, info.filename, f"unexpected end of file, {remaining} bytes short")
        remaining -= len(chunk)
        yield chunk


def _inflated_chunks(fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo, offset: int, state: dict[str, int]
                     ) -> Iterator[bytes]:
    """Inflated pieces of a deflated member, never more than its declared size. With ISA-L the
    inflater computes the CRC-32 as it goes (``state["crc"]``): no second pass over the output."""
    pieces = (_igzip_pieces(fh, wheel, info, offset, state) if _igzip is not None
              else _zlib_pieces(fh, wheel, info, offset))
    produced, limit = 0, info.file_size
    for out in pieces:
        if out:
            produced += len(out)
            if produced > limit:
                raise _corrupt(wheel, info.filename, f"inflates beyond its declared {limit} bytes")
            yield out


def _zlib_pieces(fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo, offset: int) -> Iterator[bytes]:
    inflater = _inflate_lib.decompressobj(-15)
    try:
        for chunk in _raw_chunks(fh, wheel, info, offset):
            data = chunk
            while data:
                yield inflater.decompress(data, _OUT)
                data = inflater.unconsumed_tail
        yield inflater.flush()
    except (zlib.error, _inflate_lib.error) as exc:
        raise _corrupt(wheel, info.filename, f"deflate stream error: {exc}") from exc
    if not inflater.eof:
        raise _corrupt(wheel, info.filename, "the deflate stream ends early")


def _igzip_pieces(fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo, offset: int, state: dict[str, int]
                  ) -> Iterator[bytes]:
    # DECOMP_GZIP_NO_HDR: a raw deflate stream (what a zip member is) with the gzip CRC-32 kept;
    # the zip's CRC-32 is the same function.
    inflater = _igzip.IgzipDecompressor(flag=_igzip.DECOMP_GZIP_NO_HDR)
    try:
        for chunk in _raw_chunks(fh, wheel, info, offset):
            yield inflater.decompress(chunk, _OUT)
            while not (inflater.eof or inflater.needs_input):
                yield inflater.decompress(b"", _OUT)
            if inflater.eof:
                break
    except _igzip.IsalError as exc:
        raise _corrupt(wheel, info.filename, f"deflate stream error: {exc}") from exc
    if not inflater.eof:
        raise _corrupt(wheel, info.filename, "the deflate stream ends early")
    state["crc"] = inflater.crc


def _fallback_chunks(zf: zipfile.ZipFile, wheel: Path, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """Other compression methods (never seen in wheels): let zipfile do it, CRC included."""
    try:
        with zf.open(info) as src:
            while True:
                out = src.read(_OUT)
                if not out:
                    return
                yield out
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise _corrupt(wheel, info.filename, str(exc)) from exc


_DONE = object()


def _threaded(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Run the ``chunks`` generator in a helper thread; iterate its output here."""
    # pieces, then _DONE or the producer's exception
    q: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_DEPTH)
    stop = threading.Event()

    def put(item: object) -> bool:
        # Never block for good: the consumer may have stopped (a write error) and gone away.
        while not stop.is_set():
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for piece in chunks:
                if not put(piece):
                    return
            put(_DONE)
        except BaseException as exc:  # handed over to the consumer, which raises it
            put(exc)

    worker = threading.Thread(target=produce, name="wheel-inflate", daemon=True)
    worker.start()
    try:
        while True:
            piece = q.get()
            if piece is _DONE:
                return
            if isinstance(piece, BaseException):
                raise piece
            yield piece  # type: ignore[misc]  # neither _DONE nor an exception: bytes
    finally:
        stop.set()
        worker.join()


class _WriteBehind:
    """Writes pieces to a file in a helper thread, so a write that blocks on the page cache's
    writeback does not stall inflating and hashing. Errors surface at ``close()``."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._q: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_DEPTH)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="wheel-write", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            piece = self._q.get()
            if piece is _DONE:
                return
            if self._error is None:  # after an error keep draining, so the producer never blocks
                try:
                    self._out.write(piece)  # type: ignore[call-overload]  # not _DONE: bytes
                except BaseException as exc:
                    self._error = exc

    def write(self, piece: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._q.put(piece)

    def close(self) -> None:
        self._q.put(_DONE)
        self._thread.join()
        if self._error is not None:
            raise self._error


_crc32 = getattr(_inflate_lib, "crc32", zlib.crc32)  # ISA-L's: ~4x stdlib's, the same value


def _extract_member(zf: zipfile.ZipFile, fh: BinaryIO, wheel: Path, info: zipfile.ZipInfo, target: Path, algo: str,
                    expected: str | None) -> tuple[bytes, int]:
    """Write one member to ``target``; return (digest, size). Raises on corruption.

    The zip's CRC-32 is checked for every member, in the same pass as the hash and the write, as
    pip's unpacking does (zipfile checks it on read): a member whose CRC is wrong is refused
    by ``pip install`` even when RECORD's sha256 matches, so it is refused here too.
    ``expected`` (RECORD's digest) is compared by the caller's RECORD check.
    """
    state: dict[str, int] = {}
    if info.compress_type == zipfile.ZIP_DEFLATED:
        chunks = _inflated_chunks(fh, wheel, info, _data_offset(fh, wheel, info), state)
        check_crc = True
    elif info.compress_type == zipfile.ZIP_STORED:
        chunks = _raw_chunks(fh, wheel, info, _data_offset(fh, wheel, info))
        check_crc = True
    else:
        chunks = _fallback_chunks(zf, wheel, info)
        check_crc = False  # zipfile checked it
    big = _PIPELINE and info.compress_size >= _THREAD_MIN
    if big:
        chunks = _threaded(chunks)
    hasher = hashlib.new(algo)
    crc = 0
    size = 0
    own_crc = check_crc and not (_igzip is not None and info.compress_type == zipfile.ZIP_DEFLATED)
    with open(target, "wb", buffering=0) as raw_out:
        out: _WriteBehind | BinaryIO = _WriteBehind(raw_out) if big else raw_out
        try:
            for piece in chunks:
                hasher.update(piece)
                if own_crc:
                    crc = _crc32(piece, crc)
                out.write(piece)
                size += len(piece)
        finally:
            if big:
                out.close()
    if size != info.file_size:
        raise _corrupt(wheel, info.filename, f"{size} bytes inflated, {info.file_size} declared")
    if "crc" in state:
        crc = state["crc"]
    if check_crc and crc != info.CRC:
        raise _corrupt(wheel, info.filename, f"CRC-32 mismatch: the zip says {info.CRC:08x}, the bytes give "
                       f"{crc:08x}; pip refuses such a wheel")
    return hasher.digest(), size


# ---------------------------------------------------------------------------------------------
# sizes, before anything is written

#: The most a member may inflate relative to its stored size. Deflate reaches ~1030x on runs of
#: zeros; real libraries stay far below (the real mxnet-cu112 1.9.1 wheel: libmxnet.so 1.8x, its
#: most compressible member libopenblas.so.0 3.5x). A member beyond the cap is a zip bomb and is
#: refused before a byte is written. zipfile (what pip unpacks with) only stops a member from
#: inflating past its declared size, which _inflated_chunks also enforces; the cap and the free-
#: space check below are what keep a declared 3 GiB from being written at all. Members that
#: inflate to less than _RATIO_FLOOR are exempt: a small file of zeros is no threat.
MAX_COMPRESSION_RATIO = 200
_RATIO_FLOOR = 1 << 20
#: Free space kept beyond the declared sizes (directories, filesystem overhead).
_SPACE_MARGIN = 16 << 20


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def check_ratios(wheel: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse a member that declares more than MAX_COMPRESSION_RATIO times its stored size."""
    for info in infos:
        if info.is_dir():
            continue
        if info.file_size >= _RATIO_FLOOR and info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
            raise WheelError(
                f"{wheel.name}: member {info.filename!r} declares {info.file_size} bytes stored in "
                f"{info.compress_size} ({info.file_size / max(info.compress_size, 1):.0f}x, above the "
                f"limit of {MAX_COMPRESSION_RATIO}x): a zip bomb, not a library; nothing was extracted. "
                f"{_AGAIN} without it")


def check_sizes(wheel: Path, infos: list[zipfile.ZipInfo], where: Path) -> int:
    """Refuse, before extracting, a member over MAX_COMPRESSION_RATIO and a wheel whose declared
    sizes do not fit in the free space at ``where``; returns the declared total."""
    check_ratios(wheel, infos)
    total = sum(info.file_size for info in infos if not info.is_dir())
    free = shutil.disk_usage(where).free
    if total + _SPACE_MARGIN > free:
        raise WheelError(
            f"{wheel.name} needs {total} bytes ({_gb(total)}) to extract, but {where} has {free} bytes "
            f"({_gb(free)}) free: nothing was extracted. Free space there, or run with --basetemp on a "
            "larger filesystem")
    return total


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# the entry point

def extract_wheel(wheel: Path, dest: Path) -> ExtractedWheel:
    """Extract ``wheel`` into ``dest`` (which must not exist or be empty) and verify RECORD."""
    wheel = Path(wheel)
    dest = Path(dest)
    parsed = parse_wheel_name(wheel)
    distribution, version, build_tag = parsed.distribution, parsed.version, parsed.build_tag
    tags = parsed.tag_strings
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise WheelError(f"extraction directory {dest} already exists and is not empty; "
                         "remove it or choose another")
    dest.parent.mkdir(parents=True, exist_ok=True)

    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise WheelError(f"{wheel.name} is not a readable zip archive ({exc}); it is truncated "
                         f"or corrupt: {_AGAIN}") from exc
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the extraction is an ordinary directory
    try:
        with zf, open(wheel, "rb", buffering=0) as raw:
            fh = io.BufferedReader(raw, buffer_size=_READ)
            infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
            _check_names(wheel, infos)
            check_sizes(wheel, infos, dest.parent)
            result = _extract_all(zf, fh, wheel, infos, tmp)
        if dest.exists():
            dest.rmdir()
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    members, hashes, sizes, record_problems = result
    ew = ExtractedWheel(
        path=wheel.resolve(), root=dest, filename=wheel.name, distribution=distribution,
        version=version, tags=tags, build_tag=build_tag, members=members,
        record_problems=record_problems, dist_info=None, metadata=None, requires_dist=[],
        hashes=hashes, sizes=sizes)
    read_metadata(ew)
    return ew


def _extract_all(zf: zipfile.ZipFile, fh: BinaryIO, wheel: Path, infos: list[zipfile.ZipInfo], tmp: Path
                 ) -> tuple[list[str], dict[str, str], dict[str, int], list[str]]:
    files = [i for i in infos if not i.is_dir()]
    names = [i.filename for i in files]
    record_name = find_record(names)
    problems: list[str] = []
    record_rows: dict[str, tuple[str, str]] = {}
    if record_name is None:
        problems.append("the wheel has no <name>-<version>.dist-info/RECORD: nothing can be verified")
    else:
        info = zf.getinfo(record_name)
        if info.file_size > (64 << 20):
            raise WheelError(f"{wheel.name}: {record_name} is {info.file_size} bytes; {_AGAIN}")
        try:
            text = zf.read(info).decode("utf-8")
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise _corrupt(wheel, record_name, str(exc)) from exc
        except UnicodeDecodeError:
            problems.append(f"{record_name} is not UTF-8 text")
            text = ""
        record_rows = parse_record(text, problems)

    made_dirs = {tmp}
    hashes: dict[str, str] = {}
    sizes: dict[str, int] = {}
    # setuptools stores each SONAME link of a bundled library as a second full copy (a wheel has
    # no links): ~170 MB of the release wheel. A member whose stored bytes equal an earlier one's
    # is the same file, so it is linked to that extraction instead of inflated and hashed again.
    seen_raw: dict[tuple[int, int, int, int, str], tuple[zipfile.ZipInfo, Path, bytes]] = {}
    background = _Background.start(zf, wheel, _background_member(files), tmp, record_rows)
    try:
        for info in infos:
            target = tmp / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                made_dirs.add(target)
                continue
            if background and info is background.info:
                continue  # its thread writes it
            _make_parent(target, made_dirs)
            algo, expected = _record_expectation(record_rows, info)
            key = _twin_key(info, algo)
            if background and key == background.key:
                seen_raw.setdefault(key, background.result())  # a copy of it: link once it is done
            twin = seen_raw.get(key) if info.compress_size >= _THREAD_MIN else None
            try:
                if twin is not None and _same_stored_bytes(fh, wheel, twin[0], info):
                    _link_or_copy(twin[1], target)
                    digest, size = twin[2], info.file_size
                else:
                    digest, size = _extract_member(zf, fh, wheel, info, target, algo, expected)
                    seen_raw.setdefault(key, (info, target, digest))
            except OSError as exc:
                raise _write_error(wheel, info, exc) from exc
            _finish_member(info, target, algo, digest, size, hashes, sizes)
        if background:
            info, target, digest = background.result()
            _finish_member(info, target, background.algo, digest, info.file_size, hashes, sizes)
    finally:
        if background:
            background.wait()  # after an error here: let it stop before tmp is removed

    if record_name is not None:
        verify_record(record_name, record_rows, names, hashes, sizes, problems)
    return names, hashes, sizes, problems


# Members at least this big (compressed) are extracted in a thread of their own while the rest
# of the wheel is extracted beside it: on the 900 MB benchmark wheel, libmxnet.so's SHA-256 alone
# keeps one core busy for ~1 s, and the ~250 bundled libraries fit in that time on the other.
_BACKGROUND_MIN = 32 << 20


def _background_member(files: list[zipfile.ZipInfo]) -> zipfile.ZipInfo | None:
    """The member worth a thread of its own: the largest, when it is big and there is a core."""
    if not _PIPELINE or not files:
        return None
    big = max(files, key=lambda i: i.compress_size)
    return big if big.compress_size >= _BACKGROUND_MIN else None


def _twin_key(info: zipfile.ZipInfo, algo: str) -> tuple[int, int, int, int, str]:
    """Members with equal keys may be copies of each other (then their stored bytes tell)."""
    return (info.compress_type, info.CRC, info.compress_size, info.file_size, algo)


def _record_expectation(record_rows: dict[str, tuple[str, str]], info: zipfile.ZipInfo) -> tuple[str, str | None]:
    """(hash algorithm, RECORD's digest without the ``algo=`` prefix or None) for ``info``."""
    entry = record_rows.get(info.filename)
    algo = record_algo(entry)
    expected = entry[0].split("=", 1)[1] if entry and entry[0].startswith(algo + "=") else None
    return algo, expected


def _make_parent(target: Path, made_dirs: set[Path]) -> None:
    parent = target.parent
    if parent not in made_dirs:
        parent.mkdir(parents=True, exist_ok=True)
        made_dirs.add(parent)


def _write_error(wheel: Path, info: zipfile.ZipInfo, exc: OSError) -> WheelError:
    return WheelError(f"{wheel.name}: cannot write member {info.filename!r} ({exc}); check free "
                      "disk space and that no two members clash as file and directory")


def _finish_member(info: zipfile.ZipInfo, target: Path, algo: str, digest: bytes, size: int,
                   hashes: dict[str, str], sizes: dict[str, int]) -> None:
    if (info.external_attr >> 16) & 0o111:
        os.chmod(target, 0o755)
    hashes[info.filename] = f"{algo}={b64(digest)}"
    sizes[info.filename] = size


class _Background:
    """One member extracted in a thread with its own handle on the wheel."""

    def __init__(self, zf: zipfile.ZipFile, wheel: Path, info: zipfile.ZipInfo, target: Path, algo: str,
                 expected: str | None) -> None:
        self.info, self.target, self.algo = info, target, algo
        self.key = _twin_key(info, algo)
        self._result: tuple[zipfile.ZipInfo, Path, bytes] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(zf, wheel, expected),
                                        name="wheel-background", daemon=True)

    @classmethod
    def start(cls, zf: zipfile.ZipFile, wheel: Path, info: zipfile.ZipInfo | None, tmp: Path,
              record_rows: dict[str, tuple[str, str]]) -> _Background | None:
        if info is None:
            return None
        target = tmp / info.filename
        target.parent.mkdir(parents=True, exist_ok=True)
        algo, expected = _record_expectation(record_rows, info)
        job = cls(zf, wheel, info, target, algo, expected)
        job._thread.start()
        return job

    def _run(self, zf: zipfile.ZipFile, wheel: Path, expected: str | None) -> None:
        try:
            with open(wheel, "rb", buffering=0) as raw:
                fh = io.BufferedReader(raw, buffer_size=_READ)
                digest, _size = _extract_member(zf, fh, wheel, self.info, self.target,
                                                self.algo, expected)
            self._result = (self.info, self.target, digest)
        except OSError as exc:
            self._error = _write_error(wheel, self.info, exc)
        except BaseException as exc:  # raised in the extracting thread by result()
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> tuple[zipfile.ZipInfo, Path, bytes]:
        """(info, target, digest) once the member is written; its error is raised here."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set when the thread ended without an error


def _same_stored_bytes(fh: BinaryIO, wheel: Path, first: zipfile.ZipInfo, second: zipfile.ZipInfo) -> bool:
    """True when two members' stored (compressed) bytes are identical, compared piece by piece."""
    a_off = _data_offset(fh, wheel, first)
    b_off = _data_offset(fh, wheel, second)
    done = 0
    while done < first.compress_size:
        n = min(_READ, first.compress_size - done)
        fh.seek(a_off + done)
        a = fh.read(n)
        fh.seek(b_off + done)
        b = fh.read(n)
        if len(b) < n:
            raise _corrupt(wheel, second.filename, "unexpected end of file")
        if a != b:
            return False
        done += n
    return True


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
