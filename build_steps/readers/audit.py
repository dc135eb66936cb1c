"""Every fact the static gates judge, collected once from one extraction of the wheel.

``collect(extracted, options)`` reads libmxnet.so and the bundled libraries (ELF dynamic entries),
resolves the bundled closure (build_steps.readers.loader), walks the CUDA fatbin headers, parses the
requirements, and, when given, the CMake cache, the git state and the commit stamps. Reading
never fails on a bad wheel: a problem is recorded as a fact (``libmxnet_error`` ...) for the gate
that owns it to report, so one bad input does not turn into twenty tracebacks.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from . import cmake_cache, gitstate
from .elf import find_strings, is_elf, normalize_origin, uses_origin
from ..errors import HarnessError
from .loader import Closure, ObjectInfo, object_info, reached_dirs, read_by_inode, resolve_closure
from .install_map import build_install_map, installed_view
from .install_rules import InstallFacts, collect_install_facts
from .loadability import Loadability, collect_loadability, elf_members
from ..profile_data import CMAKE_FEATURES

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from ..profile_data import Profile
    from .fatbin import FatbinReport
    from .macho_audit import MachoFacts
    from .wheel import ExtractedWheel

# ``options`` below is a build_steps.options.RunOptions, typed Any: build_steps.options imports the
# readers, so naming it here would close an import circle.

LIBMXNET = "mxnet/libmxnet.so"
BUNDLE_DIR = "mxnet/lib/"


@dataclass
class Requirements:
    """Requires-Dist split into hard requirements and extras (canonical name -> specifier text)."""
    hard: dict[str, str] = field(default_factory=dict)
    extras: dict[str, dict[str, str]] = field(default_factory=dict)      # name -> {extra: specifier}
    conditional: dict[str, str] = field(default_factory=dict)  # hard but behind a non-extra marker
    raw: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    #: two lines naming one distribution where both apply: "<line> / <line>: why"
    conflicts: list[str] = field(default_factory=list)
    #: canonical names of those distributions (the pin gate leaves them to the conflict gate)
    conflicted: set[str] = field(default_factory=set)


def _context(req: Requirement) -> str | None:
    """Where a requirement applies: "" (every install), "extra:<name>", or None (its marker is
    false here, e.g. ``python_version < "3.7"``)."""
    marker = str(req.marker) if req.marker else ""
    if "extra" in marker:
        return "extra:" + (marker.split("==", 1)[-1].strip().strip("'\"") if "==" in marker else marker)
    if req.marker is not None and marker and not req.marker.evaluate({"extra": ""}):
        return None
    return ""


def parse_requirements(lines: Iterable[Requirement | str] | None) -> Requirements:
    """Every Requires-Dist line, read the way pip reads them: all of them, not the last per name.
    Two lines for one distribution that apply together are a conflict pip resolves by demanding
    both specifiers (unsatisfiable when they disagree), so each such pair is recorded."""
    out = Requirements()
    seen: dict[tuple[str, str], tuple[str, SpecifierSet, int]] = {}   # (name, context) -> (text, specifier, line)
    for number, line in enumerate(lines or []):
        text = str(line).strip()
        out.raw.append(text)
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            out.invalid.append(f"{text}: {exc}")
            continue
        name = canonicalize_name(req.name)
        context = _context(req)
        if context is not None:
            first = seen.setdefault((name, context), (text, req.specifier, number))
            if first[2] != number:
                what = ("the same requirement twice" if first[1] == req.specifier else
                        f"conflicting specifiers ({first[1] or 'any'} and {req.specifier or 'any'}), which "
                        "pip must satisfy both at once")
                where = "" if not context else f" (both under {context.replace(':', ' ', 1)})"
                out.conflicts.append(f"Requires-Dist: {first[0]!r} and Requires-Dist: {text!r} name {name}"
                                     f"{where}: {what}")
                out.conflicted.add(name)
        marker = str(req.marker) if req.marker else ""
        if "extra" in marker:
            extra = marker.split("==", 1)[-1].strip().strip("'\"") if "==" in marker else marker
            out.extras.setdefault(name, {})[extra] = str(req.specifier)
        elif marker:
            out.conditional[name] = f"{req.specifier}; {marker}"
            # Evaluated here (the venv runs this interpreter's Python unless --build-python says
            # otherwise): `contextvars; python_version < "3.7"` installs nothing on 3.11.
            if req.marker is not None and req.marker.evaluate({"extra": ""}):
                out.hard.setdefault(name, str(req.specifier))
        else:
            out.hard[name] = str(req.specifier)
    return out


@dataclass
class Audit:
    wheel_file: str
    filename: str
    distribution: str
    version: str
    tags: list[str]
    build_tag: str | None
    record_problems: list[str]
    metadata_problems: list[str]
    members: list[str]
    profile: str
    libmxnet_present: bool
    libmxnet: ObjectInfo | None
    libmxnet_error: str | None
    bundled: list[str]             # every member under mxnet/lib/
    bundled_elf: list[str]         # those that are ELF files
    closure: Closure
    fatbin: dict[str, Any] | None  # FatbinReport.to_json() or None (no .nv_fatbin)
    fatbin_error: str | None
    requirements: Requirements
    onnx_files: list[str]
    cmake: dict[str, Any] | None = None      # {"path", "features": {KEY: {enabled, raw}}, "cuda_arch"}
    git: dict[str, Any] | None = None        # GitState as a dict
    stamps: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _fatbin_obj: FatbinReport | None = field(default=None, repr=False)
    #: the macOS flavor's Mach-O facts (build_steps.readers.macho_audit.MachoFacts); None for ELF wheels
    macho: MachoFacts | None = None
    #: every ELF member of the wheel (the closure and the loadability gates judge them all)
    elf_members: list[str] = field(default_factory=list)
    loadability: Loadability | None = None
    #: directories the wheel ships libraries in: mxnet/lib and every one a RUNPATH reaches
    shipped_dirs: list[str] = field(default_factory=list)
    #: every member in those directories (the forbidden-library rule judges them all)
    shipped: list[str] = field(default_factory=list)
    #: bytes of each file of ``bundled``, by its installed name (a wheel may ship mxnet/lib under
    #: <name>.data/platlib: the closure budget gate weighs what pip installs, where it installs it)
    bundled_bytes: dict[str, int] = field(default_factory=dict)
    #: every ELF of the wheel that carries a .nv_fatbin: member -> FatbinReport.to_json()
    fatbins: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: member -> why its .nv_fatbin cannot be read
    fatbin_errors: dict[str, str] = field(default_factory=dict)
    _fatbin_objs: dict[str, FatbinReport] = field(default_factory=dict, repr=False)
    #: where pip installs each member and what the layout, start-up and ownership gates judge
    #: (build_steps.readers.install_rules.InstallFacts)
    install: InstallFacts | None = None

    @property
    def needed(self) -> list[str]:
        return list(self.libmxnet.needed) if self.libmxnet and not self.libmxnet.error else []

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_fatbin_obj", None)
        data.pop("_fatbin_objs", None)
        data["closure"] = self.closure.to_json()
        data["members"] = len(self.members)
        return data


def _libmxnet(root: Path, extracted: ExtractedWheel, members: Collection[str] | None = None
              ) -> tuple[bool, ObjectInfo | None, str | None]:
    if not (LIBMXNET in members if members is not None else extracted.has(LIBMXNET)):
        return False, None, (f"{extracted.filename} does not contain {LIBMXNET}: the package was staged "
                             "without the library (check the build's stage step / setup.py package_data)")
    info = object_info(root, LIBMXNET)
    return True, info, info.error and f"{LIBMXNET}: {info.error}"


def _fatbin(path: Path, member: str = LIBMXNET, seen: dict[tuple[int, int], FatbinReport | None] | None = None
            ) -> tuple[FatbinReport | None, dict[str, Any] | None, str | None]:
    from .fatbin import read_fatbin  # imported late: the CPU audit needs no fatbin reader
    try:
        report = read_by_inode(path, read_fatbin, seen)
    except (HarnessError, OSError, ValueError) as exc:
        return None, None, f"cannot read the .nv_fatbin of {member}: {exc}"
    if report is None:
        return None, None, None
    return report, report.to_json(), None


def _all_fatbins(root: Path, elves: list[str], audit: Audit) -> None:
    """The fatbin of every ELF in the wheel: a second CUDA library's kernels are as much the
    wheel's promise as libmxnet.so's (SONAME twins, linked to one file, are read once)."""
    seen: dict[tuple[int, int], FatbinReport | None] = {}
    for member in elves:
        report, data, error = _fatbin(root / member, member, seen)
        if error:
            audit.fatbin_errors[member] = error
        elif report is not None:
            audit.fatbins[member] = data  # type: ignore[assignment]  # a report has its JSON
            audit._fatbin_objs[member] = report


def arch_table(audit: Audit) -> list[str]:
    """One line per library with GPU code: its SASS (suffixed variants as they are) and PTX."""
    rows: list[str] = []
    for member, fat in sorted(audit.fatbins.items(), key=lambda kv: (kv[0] != LIBMXNET, kv[0])):
        rows.append(f"{member}: SASS {' '.join(fat['sass']) or '(none)'}; PTX {' '.join(fat['ptx']) or '(none)'}; "
                    f"{fat['containers']} containers")
    rows += [f"{member}: {why}" for member, why in sorted(audit.fatbin_errors.items())]
    return rows


def _stamps(lib: Path | None, build_dir: Path | None, strings: Callable[[Path, bytes], list[str]] = find_strings
            ) -> dict[str, Any]:
    """The commit stamp: from the binary first; build files as a reported fallback."""
    out: dict[str, Any] = {"binary": [], "build_files": {}, "build_dir": str(build_dir) if build_dir else None,
           "source": None}
    if lib is not None:
        try:
            out["binary"] = sorted(set(strings(lib, gitstate.STAMP_IN_BINARY)))
        except (HarnessError, OSError) as exc:
            out["binary_error"] = str(exc)
    if build_dir is not None and build_dir.is_dir():
        out["build_files"] = gitstate.read_build_stamps(build_dir).sources
    return out


def _wheel_facts(extracted: ExtractedWheel) -> dict[str, Any]:
    """What the wheel says about itself (name, version, tags, RECORD, METADATA), any format."""
    return dict(
        wheel_file=str(getattr(extracted, "path", "")), filename=extracted.filename,
        distribution=extracted.distribution, version=str(extracted.version),
        tags=sorted(map(str, extracted.tags or [])),
        build_tag="".join(map(str, extracted.build_tag)) if extracted.build_tag else None,
        record_problems=list(extracted.record_problems or []),
        metadata_problems=list(extracted.metadata_problems or []))


def collect(extracted: ExtractedWheel, options: Any) -> Audit:
    profile = options.profile
    if profile.macho is not None:
        return _collect_macho(extracted, options)
    root = Path(extracted.root)
    members = list(extracted.members)
    hashes = dict(getattr(extracted, "hashes", None) or {})
    sizes = dict(getattr(extracted, "sizes", None) or {})
    imap = build_install_map(members, getattr(extracted, "wheel_info", None))
    view = root.parent / f"{root.name}-installed"
    names = installed_view(root, imap, view)
    if names is not None:
        # Members of <x>.data/purelib|platlib move on install: every ELF fact ($ORIGIN, RUNPATH,
        # the bundled closure) is read where pip puts the file, in a tree of links laid out so.
        root, members = view, sorted(names)
        hashes = {n: hashes[m] for n, m in names.items() if m in hashes}
        sizes = {n: sizes[m] for n, m in names.items() if m in sizes}
    else:
        names = {m: m for m in members}
    destinations = {n: (imap.placements[m].scheme, imap.placements[m].path)
                    for n, m in names.items() if m in imap.placements}
    present, lib_info, lib_error = _libmxnet(root, extracted, set(members))
    lib_path = root / LIBMXNET if present and not lib_error else None

    bundled = sorted(m for m in members if m.startswith(BUNDLE_DIR) and not m.endswith("/"))
    bundled_elf = [m for m in bundled if is_elf(root / m)]
    # Not only mxnet/lib: a library shipped elsewhere (mxnet 1.x puts them next to libmxnet.so)
    # is loaded just the same, so its NEEDED must resolve too.
    elves = elf_members(root, members)
    others = [m for m in elves if m != LIBMXNET]
    reqs = parse_requirements(getattr(extracted, "requires_dist", None) or [])
    if lib_path is not None:
        closure = resolve_closure(root, LIBMXNET, others, profile, set(reqs.hard))
    else:
        closure = Closure()
        for m in others:
            closure.objects[m] = object_info(root, m)

    audit = Audit(
        **_wheel_facts(extracted),
        members=members, profile=profile.name, libmxnet_present=present, libmxnet=lib_info,
        libmxnet_error=lib_error, bundled=bundled, bundled_elf=bundled_elf, closure=closure,
        fatbin=None, fatbin_error=None, requirements=reqs,
        onnx_files=[m for m in members if m.startswith("mxnet/onnx/")], elf_members=elves)
    _all_fatbins(root, elves, audit)
    if lib_path is not None:  # libmxnet.so's, as the arch gates and older readers of the JSON know it
        audit.fatbin = audit.fatbins.get(LIBMXNET)
        audit.fatbin_error = audit.fatbin_errors.get(LIBMXNET)
        audit._fatbin_obj = audit._fatbin_objs.get(LIBMXNET)
    audit.bundled_bytes = {m: (root / m).stat().st_size for m in bundled}
    audit.shipped_dirs = reached_dirs(root, closure, BUNDLE_DIR)
    audit.shipped = sorted(m for m in members if not m.endswith("/")
                           and m.rsplit("/", 1)[0] in audit.shipped_dirs and "/" in m)
    audit.install = _install_facts(extracted, Path(extracted.root), list(extracted.members), audit, profile,
                                   elves)
    audit.loadability = collect_loadability(
        root, members, BUNDLE_DIR, closure, hashes, sizes, audit.tags, profile,
        getattr(options, "glibc_floor", None), shipped=audit.shipped, destinations=destinations)

    _build_provenance(audit, options, lib_path)

    # Warnings the report shows (not failures): build-tree RUNPATH entries, RPATH tags (docs/background.md, G10).
    if lib_info is not None and not lib_info.error:
        # $ORIGIN-relative extras are the RUNPATH gates' (${ORIGIN} is $ORIGIN): only absolute
        # or cwd-relative entries name the build host.
        extra = [e for e in lib_info.search_path
                 if normalize_origin(e) not in profile.runpath and not uses_origin(e)]
        if extra:
            audit.warnings.append(f"{LIBMXNET} {lib_info.search_tag} carries entries beyond the profile's: "
                                  f"{':'.join(extra)} (build-host paths do not exist on users' machines)")
    rpath_libs = [m for m, o in closure.objects.items() if o.search_tag == "RPATH"]
    if rpath_libs:
        audit.warnings.append(f"{len(rpath_libs)} librar{'y uses' if len(rpath_libs) == 1 else 'ies use'} "
                              f"DT_RPATH instead of DT_RUNPATH: {', '.join(rpath_libs[:5])}")
    return audit


def _install_facts(extracted: ExtractedWheel, root: Path, members: list[str], audit: Audit, profile: Profile,
                   native: Iterable[str] = ()) -> InstallFacts:
    """The install map's facts (any binary format): ``native`` are the members known to be native code."""
    return collect_install_facts(root, members, getattr(extracted, "wheel_info", None), audit.tags,
                                 getattr(extracted, "requires_dist", None) or [], profile, native)


def _build_provenance(audit: Audit, options: Any, lib_path: Path | None,
                      strings: Callable[[Path, bytes], list[str]] = find_strings) -> None:
    """The CMake cache, git state and commit stamps, when --cmake-cache / --mxnet-src name them;
    ``strings`` finds the stamp in the library (ELF .rodata, or Mach-O __cstring)."""
    profile = options.profile
    # Build provenance: the cache names the build dir; the tree's build dir otherwise.
    cache_path = options.cmake_cache
    build_dir = None
    if cache_path is None and options.mxnet_src is not None:
        # the harness's build dir beside the tree, else one in it (an older harness's, the fork's own script's)
        places = [options.build_dir] if options.build_dir else [profile.default_build_dir(options.mxnet_src),
                                                                options.mxnet_src / profile.build_dir]
        bd = next((p for p in places if (p / "CMakeCache.txt").is_file()), places[0])
        if (bd / "CMakeCache.txt").is_file():
            cache_path = bd / "CMakeCache.txt"
        build_dir = bd
    if cache_path is not None:
        entries = cmake_cache.read_cache(cache_path)
        arch = entries.get("MXNET_CUDA_ARCH")
        audit.cmake = {"path": str(cache_path),
                       "features": cmake_cache.feature_states(entries, CMAKE_FEATURES),
                       "cuda_arch": arch.value if arch else None}
        build_dir = cmake_cache.cache_build_dir(cache_path)
    if options.mxnet_src is not None:
        audit.git = asdict(gitstate.read_git_state(options.mxnet_src))
    if options.mxnet_src is not None or cache_path is not None:
        audit.stamps = _stamps(lib_path, build_dir, strings)


def _collect_macho(extracted: ExtractedWheel, options: Any) -> Audit:
    """The macOS flavor: the format-neutral facts as for ELF, the libraries read as Mach-O."""
    from . import macho
    from .macho_audit import collect_macho, tag_warnings
    policy = options.profile.macho
    members = list(extracted.members)
    facts = collect_macho(Path(extracted.root), members, extracted.tags, policy)
    audit = Audit(
        **_wheel_facts(extracted),
        members=members, profile=options.profile.name, libmxnet_present=facts.libmxnet_present,
        libmxnet=None, libmxnet_error=facts.errors.get(policy.libmxnet), bundled=sorted(
            m for m in members if m.startswith(BUNDLE_DIR) and not m.endswith("/")),
        bundled_elf=[], closure=Closure(), fatbin=None, fatbin_error=None,
        requirements=parse_requirements(getattr(extracted, "requires_dist", None) or []),
        onnx_files=[m for m in members if m.startswith("mxnet/onnx/")], macho=facts)
    audit.warnings += tag_warnings(facts)
    audit.install = _install_facts(extracted, Path(extracted.root), members, audit, options.profile,
                                   sorted(getattr(facts, "images", {}) or {}))
    readable = policy.libmxnet in facts.images
    _build_provenance(audit, options, Path(extracted.root) / policy.libmxnet if readable else None,
                      macho.find_strings)
    return audit
