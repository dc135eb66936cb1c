"""CMake's File API (cmake-file-api(7)): the facts of a configure, as CMake itself records them.

Before a configure the harness writes a stateless query (:func:`write_query`) under
``<build>/.cmake/api/v1/query/client-mxnet-harness/``; CMake answers at the end of its generate
step with a reply index and JSON files under ``<build>/.cmake/api/v1/reply/``. That is how
scikit-build-core reads CMake, and it replaces regexes over CMake's stdout and its generated files:
the compilers and their versions (toolchains-v1), the flags and the defines each target's sources
are compiled with (codemodel-v2).

The build dir is written by the tree's CMake code, so the reply is DATA, read the way the build's
logs are (build_steps.errors.read_log): every directory and file opened without following a link,
each file bounded in size, every file name the index gives a plain name inside the reply dir, and a
reply that is missing, malformed or larger than the bounds is one :class:`StepError` line, never a
crash. It says what the build was configured with; it is never taken as configuration.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StepError

#: the harness's client name in the query dir (cmake-file-api(7): ``client-<name>``)
CLIENT = "client-mxnet-harness"
#: what the harness asks for: the target model and the compilers (cache-v2 is not asked: the
#: cache is read from CMakeCache.txt by readers.cmake_cache, the one cache parser)
REQUESTS = (("codemodel", 2), ("toolchains", 1))
#: the largest reply file read (the real fork's mxnet target, ~1300 sources, is well under 8 MiB)
MAX_FILE_BYTES = 32 * 1024 * 1024
#: the most reply files read in one reply (the index, codemodel, toolchains and the named targets)
MAX_FILES = 64
_API = (".cmake", "api", "v1")
#: a reply file's name as CMake writes it: a plain name, no directory part, no leading dot
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*\.json$")
_INDEX = re.compile(r"^index-[A-Za-z0-9_.\-]+\.json$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _refuse(message: str) -> StepError:
    return StepError("configure", f"CMake File API reply: {message}")


@dataclass(frozen=True)
class Compiler:
    """One language's compiler as CMake found it (toolchains-v1)."""
    language: str
    id: str            # "GNU", "NVIDIA", "Clang", ... ("" when CMake could not tell)
    version: str       # "12.2.0", "13.0.88" ("" when CMake could not tell)
    path: str          # the compiler CMake runs


@dataclass(frozen=True)
class CompileGroup:
    """Sources of one target compiled with the same flags (codemodel-v2 compileGroups)."""
    language: str
    fragments: tuple[str, ...]  # compileCommandFragments: the flags, CMAKE_<LANG>_FLAGS among them
    defines: tuple[str, ...]    # "NAME" or "NAME=VALUE", as CMake passes them with -D


@dataclass(frozen=True)
class Target:
    name: str
    type: str
    compile_groups: tuple[CompileGroup, ...]

    def defines(self) -> set[str]:
        """Every define any of the target's sources is compiled with."""
        return {d for g in self.compile_groups for d in g.defines}

    def fragments(self, language: str) -> list[str]:
        """The flags the target's ``language`` sources are compiled with, in order."""
        return [f for g in self.compile_groups if g.language == language for f in g.fragments]


@dataclass(frozen=True)
class Reply:
    cmake_version: str
    compilers: dict[str, Compiler] = field(default_factory=dict)   # language -> Compiler
    targets: dict[str, Target] = field(default_factory=dict)       # the named targets found


def api_dir(build_dir: Path) -> Path:
    return Path(build_dir).joinpath(*_API)


@contextmanager
def _walk(base: Path, parts: Iterable[str], create: bool = False) -> Iterator[int]:
    """A descriptor of ``base/parts...``, each part opened without following a link (and made
    when ``create``); a link or a non-directory on the way is refused."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the harness's own choice of build dir
    try:
        where = Path(base)
        for part in parts:
            where = where / part
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refuse(f"{where} is a link or not a directory (only the build's own code could "
                                  "have put it there): not read") from None
                if exc.errno == errno.ENOENT:
                    raise _refuse(f"{where} is missing: CMake wrote no reply to the harness's query "
                                  "(a configure that stopped before generating?)") from None
                raise _refuse(f"{where}: {exc.strerror}") from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def write_query(build_dir: Path) -> Path:
    """Ask the next configure of ``build_dir`` for :data:`REQUESTS`, and drop any earlier reply
    (a reply left from another configure is never read as this one's). No link is followed:
    a link planted on the way is a StepError. Returns the query file."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    with _walk(build_dir, _API, create=True) as v1:
        try:
            st = os.stat("reply", dir_fd=v1, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree("reply", dir_fd=v1)  # fd-based: no link inside is followed
            else:
                os.unlink("reply", dir_fd=v1)
    body = json.dumps({"requests": [{"kind": k, "version": v} for k, v in REQUESTS]}, indent=1).encode()
    with _walk(build_dir, (*_API, "query", CLIENT), create=True) as qdir:
        try:
            fd = os.open("query.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644, dir_fd=qdir)
        except OSError as exc:
            raise _refuse(f"cannot write the query in {build_dir}: {exc.strerror} (a link planted there?)") from None
        with os.fdopen(fd, "wb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise _refuse(f"{api_dir(build_dir) / 'query' / CLIENT / 'query.json'} is not a plain file")
            fh.write(body)
    return api_dir(build_dir) / "query" / CLIENT / "query.json"


class _ReplyDir:
    """The reply dir, open: its files read by name, bounded, never through a link."""

    def __init__(self, fd: int, where: Path):
        self.fd, self.where, self.read_count = fd, where, 0

    def load(self, name: object) -> dict[str, object]:
        if not isinstance(name, str) or not _NAME.match(name):
            raise _refuse(f"the index names {name!r}, not a file of {self.where}: not read")
        self.read_count += 1
        if self.read_count > MAX_FILES:
            raise _refuse(f"more than {MAX_FILES} files to read in {self.where}: not read")
        path = self.where / name
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(f"{path} is a link (only the build's own code could have planted it): "
                              "not read") from None
            raise _refuse(f"{path}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _refuse(f"{path} is not a plain file: not read")
            if st.st_size > MAX_FILE_BYTES:
                raise _refuse(f"{path} is {st.st_size} bytes, over the {MAX_FILE_BYTES} read: not read")
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise _refuse(f"{path} grew over the {MAX_FILE_BYTES} bytes read: not read")
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise _refuse(f"{path} is not JSON ({str(exc)[:120]})") from None
        return _obj(doc, str(path))


def _obj(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _refuse(f"{where}: an object was expected, found {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise _refuse(f"{where}: a list was expected, found {type(value).__name__}")
    return value


def _str(value: object, where: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise _refuse(f"{where}: a string was expected, found {type(value).__name__}")
    return value


def read_reply(build_dir: Path, targets: Iterable[str] = ()) -> Reply:
    """The reply to the harness's query in ``build_dir``: CMake's version, the compilers, and the
    compile groups of each of ``targets`` that the build defines (one absent is not in
    ``Reply.targets``). A missing, malformed, oversized or linked reply is a StepError."""
    where = api_dir(build_dir) / "reply"
    with _walk(Path(build_dir), (*_API, "reply")) as fd:
        files = _ReplyDir(fd, where)
        indexes = sorted(n for n in os.listdir(fd) if _INDEX.match(n))
        if not indexes:
            raise _refuse(f"no index-*.json in {where}: CMake wrote no reply (a configure that stopped "
                          "before generating?)")
        index = files.load(indexes[-1])  # cmake-file-api(7): the index with the largest name is current
        cmake = _obj(_obj(index.get("cmake"), f"{indexes[-1]}: cmake").get("version"), f"{indexes[-1]}: cmake.version")
        version = _str(cmake.get("string"), f"{indexes[-1]}: cmake.version.string")
        ours = _obj(_obj(index.get("reply"), f"{indexes[-1]}: reply").get(CLIENT),
                    f"{indexes[-1]}: reply.{CLIENT} (the harness's query was not answered)")
        answer = _obj(ours.get("query.json"), f"{indexes[-1]}: reply.{CLIENT}.query.json")
        if "error" in answer:
            raise _refuse(f"CMake refused the harness's query: {str(answer['error'])[:200]}")
        responses: dict[str, str] = {}
        for i, item in enumerate(_list(answer.get("responses"), f"{indexes[-1]}: responses")):
            r = _obj(item, f"{indexes[-1]}: responses[{i}]")
            if "error" in r:
                raise _refuse(f"CMake answered the query with an error: {str(r['error'])[:200]}")
            kind = _str(r.get("kind"), f"{indexes[-1]}: responses[{i}].kind")
            responses[kind] = _str(r.get("jsonFile"), f"{indexes[-1]}: responses[{i}].jsonFile")
        missing = [k for k, _v in REQUESTS if k not in responses]
        if missing:
            raise _refuse(f"{indexes[-1]} answers no {', '.join(missing)}")
        compilers = _compilers(files.load(responses["toolchains"]), responses["toolchains"])
        found = _targets(files, files.load(responses["codemodel"]), responses["codemodel"], set(targets))
    return Reply(cmake_version=version, compilers=compilers, targets=found)


def _compilers(doc: Mapping[str, object], name: str) -> dict[str, Compiler]:
    out = {}
    for i, item in enumerate(_list(doc.get("toolchains"), f"{name}: toolchains")):
        where = f"{name}: toolchains[{i}]"
        tc = _obj(item, where)
        lang = _str(tc.get("language"), f"{where}.language")
        comp = _obj(tc.get("compiler"), f"{where}.compiler")
        out[lang] = Compiler(language=lang, id=_str(comp.get("id"), f"{where}.compiler.id", ""),
                             version=_str(comp.get("version"), f"{where}.compiler.version", ""),
                             path=_str(comp.get("path"), f"{where}.compiler.path", ""))
    return out


def _targets(files: _ReplyDir, doc: Mapping[str, object], name: str, wanted: set[str]) -> dict[str, Target]:
    configs = _list(doc.get("configurations"), f"{name}: configurations")
    if not configs:
        raise _refuse(f"{name} has no configuration")
    out: dict[str, Target] = {}
    # a single-config generator (Ninja, Makefiles): the one configuration is the build's
    for i, item in enumerate(_list(_obj(configs[0], f"{name}: configurations[0]").get("targets"),
                                   f"{name}: configurations[0].targets")):
        where = f"{name}: targets[{i}]"
        ref = _obj(item, where)
        tname = _str(ref.get("name"), f"{where}.name")
        if tname not in wanted:
            continue
        tdoc = files.load(ref.get("jsonFile"))
        groups = []
        for j, g in enumerate(_list(tdoc.get("compileGroups", []), f"{tname}: compileGroups")):
            gw = f"{tname}: compileGroups[{j}]"
            grp = _obj(g, gw)
            groups.append(CompileGroup(
                language=_str(grp.get("language"), f"{gw}.language"),
                fragments=tuple(_str(_obj(f, f"{gw}.fragment").get("fragment"), f"{gw}.fragment")
                                for f in _list(grp.get("compileCommandFragments", []), f"{gw}.compileCommandFragments")),
                defines=tuple(_str(_obj(d, f"{gw}.define").get("define"), f"{gw}.define")
                              for d in _list(grp.get("defines", []), f"{gw}.defines"))))
        out[tname] = Target(name=tname, type=_str(tdoc.get("type"), f"{tname}: type"), compile_groups=tuple(groups))
    return out
