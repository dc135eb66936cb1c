"""Will the wheel load on a user's machine, not only on the build host? The facts, for every ELF in it.

``collect_loadability`` reads each ELF member once (build_steps.readers.elf_load; twins that extraction
linked to one file are read once) and puts together what the loadability gates judge:
- every RUNPATH/RPATH entry, and those that are not ``$ORIGIN``-relative or leave the install tree;
- what the loader refuses: an executable-stack request, text relocations, another machine or
  ELF class than the wheel's platform tag;
- the bundle directory's hygiene: libraries nothing needs (through the closure), one SONAME with
  two different contents, byte-identical copies (a wheel has no symlinks);
- the highest GLIBC_/GLIBCXX_/CXXABI_ versions needed, by which file, against the floor;
- the unresolved NEEDED entries of the closure (build_steps.readers.loader) and the graphics libraries
  bundled (the OpenGL/X11 stack a slim container lacks).
Nothing here raises on a bad wheel: an unreadable ELF is recorded for the gates to report.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NotElfError
from .elf import is_elf, normalize_origin
from .elf_load import PLATFORM_ELF, LoadFacts, platform_arch, read_load_facts
from .loader import BUNDLED, UNRESOLVED, Closure, read_by_inode
from .symbol_floor import effective_floor, split_version, vtuple
from .wheel_name import platform_of

if TYPE_CHECKING:
    from packaging.tags import Tag

    from ..profile_data import Profile

#: Bundled libraries of the graphics stack: what OpenCV's closure reaches and a slim container
#: lacks ("libGL.so.1: cannot open shared object file" is the classic failure on such images).
GRAPHICS_RE = re.compile(r"^lib(GL|GLX|GLU|GLdispatch|EGL|GLESv\d|OpenGL|gbm|drm|X11|X11-xcb|xcb|Xau|"
                         r"Xdmcp|Xext|Xrender|Xfixes|Xi|Xrandr|Xcursor|ICE|SM|wayland-\w+)(?:[.-]|$)")

_NOT_ELF_SUFFIXES = (".py", ".pyi", ".pyc", ".h", ".hpp", ".cuh", ".cc", ".cpp", ".txt", ".md", ".json")


@dataclass
class ElfFacts:
    member: str
    runpath_tag: str | None = None      # RUNPATH, RPATH or None
    runpath: list[str] = field(default_factory=list)
    elf_class: int | None = None
    little_endian: bool | None = None
    machine: str | None = None
    stack: str | None = None            # rw / rwx / None (no PT_GNU_STACK)
    textrel: bool = False
    max_versions: dict[str, str] = field(default_factory=dict)   # family -> "2.34"
    error: str | None = None


@dataclass
class Loadability:
    platform: str | None                # the tag's architecture (x86_64 ...)
    objects: dict[str, ElfFacts] = field(default_factory=dict)         # member -> ElfFacts
    bad_runpath: list[dict[str, Any]] = field(default_factory=list)     # {member, tag, entry, why}
    refused: list[dict[str, str]] = field(default_factory=list)         # {member, kind, reason}
    unresolved: list[dict[str, Any]] = field(default_factory=list)      # {by, needed, detail}
    host_needed: dict[str, Any] = field(default_factory=dict)     # baseline group -> sorted SONAMEs (a set while collected)
    stale: list[str] = field(default_factory=list)           # bundled members nothing needs
    #: why stale could not be judged (a reached bundled file is not ELF: what it needed is unknown)
    stale_undecided: str = ""
    soname_conflicts: dict[str, list[str]] = field(default_factory=dict)  # SONAME -> [members] (different bytes)
    duplicates: list[list[str]] = field(default_factory=list)      # [[members with identical bytes], ...]
    duplicate_bytes: int = 0
    symbol_max: dict[str, dict[str, str]] = field(default_factory=dict)      # family -> {version, member, library}
    floor: dict[str, str] = field(default_factory=dict)           # family -> version
    floor_source: dict[str, str] = field(default_factory=dict)
    floor_exceeded: list[dict[str, str]] = field(default_factory=list)  # {member, symbol, library, floor}
    graphics: list[str] = field(default_factory=list)        # bundled graphics-stack members


def elf_members(root: Path, members: Iterable[str]) -> list[str]:
    """Every member that is an ELF file (dist-info and obvious source/text files skipped)."""
    root = Path(root)
    return [m for m in members if not m.endswith("/") and ".dist-info/" not in m
            and not m.endswith(_NOT_ELF_SUFFIXES) and is_elf(root / m)]


def _read_all(root: Path, elves: list[str], closure: Closure) -> dict[str, tuple[ElfFacts, LoadFacts | None]]:
    seen: dict[tuple[int, int], LoadFacts] = {}
    out: dict[str, tuple[ElfFacts, LoadFacts | None]] = {}
    for member in elves:
        facts = ElfFacts(member)
        obj = closure.objects.get(member)
        if obj is not None and not obj.error:
            facts.runpath_tag, facts.runpath = obj.search_tag, list(obj.search_path)
        path = root / member
        try:
            load = read_by_inode(path, read_load_facts, seen)
        except (NotElfError, OSError) as exc:
            facts.error = str(exc)
            out[member] = (facts, None)
            continue
        facts.elf_class, facts.little_endian, facts.machine, facts.stack, facts.textrel = (
            load.elf_class, load.little_endian, load.machine, load.stack, load.textrel)
        out[member] = (facts, load)
    return out


def _runpath_problems(member: str, facts: ElfFacts, destination: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """``destination``: (scheme, path under the scheme's root) where pip installs the member
    (build_steps.readers.install_map); $ORIGIN is that directory, not the member's place in the zip."""
    scheme, path = destination or ("platlib", member)
    depth = path.count("/")   # directories between the scheme's root (site-packages) and the member
    out: list[dict[str, Any]] = []
    for entry in facts.runpath:
        norm = normalize_origin(entry)
        if not norm.startswith("$ORIGIN"):
            why = ("an absolute path: a directory of the build host, which on a user's machine is "
                   "missing or, worse, writable by someone else (library injection)"
                   if norm.startswith("/") else
                   "relative to the process's working directory, not to the library (library injection)"
                   if norm else "an empty entry, which the loader reads as the working directory")
            out.append({"member": member, "tag": facts.runpath_tag, "entry": entry, "why": why})
            continue
        rest = [p for p in norm[len("$ORIGIN"):].split("/") if p not in ("", ".")]
        level = depth
        for part in rest:
            level += -1 if part == ".." else 1
            if level < 0:
                why = ("it climbs out of site-packages, to directories the wheel does not install"
                       if scheme in ("purelib", "platlib") else
                       f"the library installs to the {scheme} scheme (<{scheme}>/{path}), and the entry "
                       f"climbs out of that scheme's root, whose place beside site-packages differs "
                       "between layouts (venv, --user, --prefix, --target)")
                out.append({"member": member, "tag": facts.runpath_tag, "entry": entry, "why": why})
                break
    return out


#: Kinds of loader refusal (the ``kind`` of each entry of Loadability.refused).
EXEC_STACK, TEXTREL, PLATFORM = "exec-stack", "textrel", "platform"


def _refusals(member: str, facts: ElfFacts, platform: str | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if facts.stack is None:
        out.append((EXEC_STACK, f"{member}: no PT_GNU_STACK header, so the loader gives it an executable stack; glibc 2.41 "
                   "and later refuse to load it (\"cannot enable executable stack\"); fix: link with "
                   "-Wl,-z,noexecstack"))
    elif "x" in facts.stack:
        out.append((EXEC_STACK, f"{member}: PT_GNU_STACK asks for an executable stack (RWX); glibc 2.41 and later refuse "
                   "to load it (\"cannot enable executable stack\"); fix: link with -Wl,-z,noexecstack "
                   "(and mark assembly sources .note.GNU-stack)"))
    if facts.textrel:
        out.append((TEXTREL, f"{member}: has text relocations (DT_TEXTREL); loaders with W^X (SELinux, hardened "
                   "kernels) refuse it and every process patches its code pages; fix: compile all of "
                   "its objects with -fPIC"))
    want = PLATFORM_ELF.get(platform) if platform else None
    if want is not None:
        cls, little, machine = want
        if (facts.elf_class, facts.little_endian, facts.machine) != (cls, little, machine):
            order: dict[bool | None, str] = {True: "little-endian", False: "big-endian"}
            out.append((PLATFORM, f"{member}: is ELF{facts.elf_class} {facts.machine} {order[facts.little_endian]}, "
                       f"but the wheel's platform tag says {platform} (ELF{cls} {machine} {order[little]}): the loader refuses it (\"wrong ELF class\" "
                       "or \"cannot open shared object file\"); fix: rebuild it for the tag's platform"))
    return out


def _reached(bundle_dir: str, facts: Mapping[str, object], closure: Closure, bundled: list[str]) -> set[str]:
    """Members reached from every ELF outside the bundle dir, through NEEDED names (the resolved
    member, and any bundled file of that name: a broken RUNPATH is another gate's failure)."""
    by_name: dict[str, list[str]] = {}
    for m in bundled:
        by_name.setdefault(m.rsplit("/", 1)[-1], []).append(m)
    found: dict[tuple[str, str], str] = {}
    for r in closure.resolutions:
        if r.verdict == BUNDLED and r.found:
            found.setdefault((r.by, r.needed), r.found)
    todo = [m for m in facts if not m.startswith(bundle_dir)]
    reached = set(todo)
    while todo:
        member = todo.pop()
        obj = closure.objects.get(member)
        for name in (obj.needed if obj is not None and not obj.error else []):
            for target in [found.get((member, name)), *by_name.get(name, [])]:
                if target and target not in reached:
                    reached.add(target)
                    todo.append(target)
    return reached


def collect_loadability(root: Path | str, members: Collection[str], bundle_dir: str, closure: Closure,
                        hashes: Mapping[str, str], sizes: Mapping[str, int], tags: Collection[Tag | str],
                        profile: Profile, floor_override: Mapping[str, str] | None = None,
                        shipped: Iterable[str] | None = None,
                        destinations: Mapping[str, tuple[str, str]] | None = None) -> Loadability:
    """``shipped``: every member of a directory a RUNPATH reaches (default: ``bundle_dir``'s);
    one SONAME with two contents is judged across them all."""
    root = Path(root)
    elves = elf_members(root, members)
    platforms = {arch for arch in (platform_arch(platform_of(t)) for t in tags) if arch is not None}
    platform = sorted(platforms)[0] if len(platforms) == 1 else None
    out = Loadability(platform=platform)
    read = _read_all(root, elves, closure)
    out.floor, out.floor_source = effective_floor(profile.symbol_floor, floor_override, tags)

    for member, (facts, load) in read.items():
        out.objects[member] = facts
        if load is None:
            continue  # facts.error; the closure gate reports an unreadable ELF
        out.bad_runpath += _runpath_problems(member, facts, (destinations or {}).get(member))
        out.refused += [{"member": member, "kind": k, "reason": r} for k, r in _refusals(member, facts, platform)]
        for need in load.version_needs:
            parsed = split_version(need.version)
            if parsed is None or need.weak:
                continue
            family, version = parsed
            text = ".".join(map(str, version))
            if family not in facts.max_versions or version > vtuple(facts.max_versions[family]):
                facts.max_versions[family] = text
            top = out.symbol_max.get(family)
            if top is None or version > vtuple(top["version"]):
                out.symbol_max[family] = {"version": text, "member": member, "library": need.library}
            limit = out.floor.get(family)
            if limit is not None and version > vtuple(limit):
                out.floor_exceeded.append({"member": member, "symbol": need.version,
                                           "library": need.library, "floor": f"{family}_{limit}"})

    for r in closure.resolutions:
        if r.verdict == UNRESOLVED:
            out.unresolved.append({"by": r.by, "needed": r.needed, "detail": r.detail, "rule": r.rule})
        elif r.verdict == "host" and r.found:
            out.host_needed.setdefault(r.found, set()).add(r.needed)
    out.host_needed = {g: sorted(v) for g, v in sorted(out.host_needed.items())}

    bundled = sorted(m for m in members if m.startswith(bundle_dir) and not m.endswith("/"))
    bundled_elf = [m for m in bundled if m in read]
    reached = _reached(bundle_dir, read, closure, bundled)
    by_hash: dict[str, list[str]] = {}
    for m in elves:
        if m in hashes:
            by_hash.setdefault(hashes[m], []).append(m)
    out.duplicates = sorted(sorted(g) for g in by_hash.values() if len(g) > 1)
    out.duplicate_bytes = sum(sizes.get(g[0], 0) * (len(g) - 1) for g in out.duplicates)
    by_soname: dict[str, list[str]] = {}
    shipped_elf = sorted(set(bundled_elf) | {m for m in (shipped or []) if m in read})
    for m in shipped_elf:
        obj = closure.objects.get(m)
        soname = obj.soname if obj is not None and obj.soname else m.rsplit("/", 1)[-1]
        by_soname.setdefault(soname, []).append(m)
    out.soname_conflicts = {s: sorted(ms) for s, ms in sorted(by_soname.items())
                            if len({hashes.get(m) for m in ms}) > 1}
    conflicted = {m for ms in out.soname_conflicts.values() for m in ms}
    reached_hashes = {hashes.get(m) for m in reached}
    not_elf = sorted(m for m in reached if m in bundled and m not in read)
    if not_elf:
        # Reached by name but unreadable: the libraries only it needed would all look unneeded,
        # one fault reported as many. The closure gate names the file; stale is not judged.
        out.stale_undecided = (f"{', '.join(not_elf)} {'is' if len(not_elf) == 1 else 'are'} not ELF, so "
                               f"what {'it' if len(not_elf) == 1 else 'they'} would need is unknown")
        bundled = []
    for m in bundled:
        if m in reached or m in conflicted:
            continue
        if m in read and hashes.get(m) in reached_hashes:
            continue  # a byte-identical copy of a needed library: the duplicates gate's
        out.stale.append(m)
    out.graphics = [m for m in bundled_elf if GRAPHICS_RE.match(m.rsplit("/", 1)[-1])]
    return out


def summary_lines(ld: Loadability | None) -> list[str]:
    """The report's lines on loadability (build_steps.readers.report adds them to the provenance summary)."""
    if ld is None:
        return []
    lines = [f"ELF files: {len(ld.objects)} (platform {ld.platform or 'unknown'}); unresolved NEEDED: "
             + (", ".join(f"{u['needed']} (by {u['by']})" for u in ld.unresolved[:8]) or "none")]
    by_rule: dict[str, list[str]] = {}
    for u in ld.unresolved:
        by_rule.setdefault(u.get("rule") or "other", []).append(u["needed"])
    for rule, names in sorted(by_rule.items()):
        lines.append(f"  refused by loader rule {rule}: {', '.join(sorted(set(names)))}")
    for group, names in ld.host_needed.items():
        lines.append(f"left to the host ({group}): {', '.join(names)}")
    top = [f"{f}_{v['version']} ({v['member']})" for f, v in ld.symbol_max.items()]
    lines.append(f"highest symbol versions: {', '.join(top) or '(none)'}; floor: "
                 + ", ".join(f"{f}_{v} ({ld.floor_source.get(f)})" for f, v in sorted(ld.floor.items())))
    stacks = sorted({f"{o.stack or 'none'}" for o in ld.objects.values() if not o.error})
    lines.append(f"stack flags: {', '.join(stacks) or '-'}; RUNPATH problems: {len(ld.bad_runpath)}; "
                 f"loader refusals: {len(ld.refused)}; stale: {len(ld.stale) if not ld.stale_undecided else 'not judged'}; SONAME conflicts: "
                 f"{len(ld.soname_conflicts)}; duplicate files: {sum(len(g) - 1 for g in ld.duplicates)} "
                 f"({ld.duplicate_bytes / 1e6:.1f} MB)")
    lines.append("graphics libraries bundled: "
                 + (", ".join(m.rsplit("/", 1)[-1] for m in ld.graphics) or "(none)"))
    return lines
