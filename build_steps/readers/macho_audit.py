"""The macOS wheel's Mach-O facts: every image in it, where each of its dylib references resolves,
and what the wheel's platform tags promise.

References are resolved the way dyld resolves them, inside the extracted wheel:
``@loader_path/X`` relative to the image that names it; ``@rpath/X`` through the LC_RPATH entries of
that image and then of the images that loaded it (dyld's rpath stack: libmxnet.dylib's
``@loader_path/lib`` serves the bundled libraries it loads), each ``@loader_path`` in an rpath
expanded relative to the image that declared it; ``/usr/lib/`` and ``/System/`` are the system's.
Anything else (an absolute build-host path, ``@executable_path`` -- that is python's directory --
or a bare relative name) cannot be found on a user's Mac from inside the wheel.
"""
from __future__ import annotations

import posixpath
import re
import struct
from dataclasses import dataclass, field
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HarnessError
from .macho import MachOInfo, Slice, is_macho, read_macho, signature_problem
from ..profile_data import MachoPolicy
from .wheel_name import platform_of

if TYPE_CHECKING:
    from packaging.tags import Tag

BUNDLED, SYSTEM, BUILD_HOST, UNRESOLVED = "bundled", "system", "build-host", "unresolved"
#: macosx_<major>_<minor>_<arch>; the multi-arch names expand to the slices they require.
_TAG_RE = re.compile(r"^macosx_(\d+)_(\d+)_(\w+)$")
_TAG_ARCHS = {"universal2": ("arm64", "x86_64"), "intel": ("i386", "x86_64"),
              "fat64": ("ppc64", "x86_64"), "universal": ("i386", "ppc", "x86_64")}


@dataclass
class Reference:
    by: str            # the wheel member whose load command this is
    kind: str          # LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, ...
    path: str          # as written in the load command
    verdict: str       # bundled | system | build-host | unresolved
    target: str | None = None   # the member it resolves to
    detail: str = ""


@dataclass
class PlatformTag:
    tag: str
    min_os: str | None
    archs: tuple[str, ...]


@dataclass
class MachoFacts:
    arch: str
    libmxnet: str
    libmxnet_present: bool
    images: dict[str, MachOInfo] = field(default_factory=dict)     # member -> MachOInfo
    errors: dict[str, str] = field(default_factory=dict)     # member -> why it could not be read
    references: list[Reference] = field(default_factory=list)
    platform_tags: list[PlatformTag] = field(default_factory=list)
    non_macos_tags: list[str] = field(default_factory=list)
    #: member -> {arch: why its signature fails, or None when valid}, for every arm64 slice
    signatures: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def image_slice(self, member: str) -> Slice | None:
        """The slice dyld would load on the profile's arch (the first one if there is none)."""
        info = self.images.get(member)
        if info is None or not info.slices:
            return None
        return info.slice_for(self.arch) or info.slices[0]

    def references_of(self, member: str) -> list[Reference]:
        return [r for r in self.references if r.by == member]

    @property
    def bundled_images(self) -> list[str]:
        return sorted(m for m in self.images if m != self.libmxnet)


def version_tuple(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")) if text else ()


def parse_platform_tags(tags: Iterable[Tag | str]) -> tuple[list[PlatformTag], list[str]]:
    """(macOS tags as PlatformTag, other platform tags) from a wheel's tags."""
    mac: list[PlatformTag] = []
    other: list[str] = []
    # packaging Tags or their text (interpreter-abi-platform): the platform is the last part.
    for tag in sorted({platform_of(t) for t in tags}):
        m = _TAG_RE.match(tag)
        if not m:
            other.append(tag)
            continue
        arch = m.group(3)
        mac.append(PlatformTag(tag=tag, min_os=f"{int(m.group(1))}.{int(m.group(2))}",
                               archs=_TAG_ARCHS.get(arch, (arch,))))
    return mac, other


def is_system(path: str, policy: MachoPolicy) -> bool:
    return path.startswith(policy.system_prefixes)


def _inside(candidate: str) -> str | None:
    norm = posixpath.normpath(candidate)
    return None if norm.startswith("../") or norm == ".." or norm.startswith("/") else norm


class _Resolver:
    def __init__(self, facts: MachoFacts, members: set[str], policy: MachoPolicy) -> None:
        self.facts, self.members, self.policy = facts, members, policy

    def _found(self, candidate: str, how: str) -> tuple[str | None, str]:
        member = _inside(candidate)
        if member is None:
            return None, f"{how} points outside the wheel ({posixpath.normpath(candidate)})"
        if member in self.facts.images:
            return member, how
        if member in self.facts.errors:
            return None, f"{how} is {member}, which is not a readable Mach-O library"
        if member in self.members:
            return None, f"{how} is {member}, which is not a Mach-O library"
        return None, f"{how}: {member} is not in the wheel"

    def resolve(self, by: str, kind: str, path: str, stack: list[tuple[str, str]]) -> Reference:
        ref = Reference(by=by, kind=kind, path=path, verdict=UNRESOLVED)
        here = posixpath.dirname(by)
        if is_system(path, self.policy):
            ref.verdict = SYSTEM
        elif path.startswith("@loader_path/"):
            target, why = self._found(posixpath.join(here, path[len("@loader_path/"):]), "@loader_path")
            ref.target, ref.detail = target, why
        elif path.startswith("@rpath/"):
            ref.target, ref.detail = self._rpath(path[len("@rpath/"):], stack)
        elif path.startswith("@executable_path/"):
            ref.detail = ("@executable_path is the directory of the program (python), not of the wheel: "
                          "it does not resolve from an installed package")
        elif path.startswith("/"):
            ref.verdict = BUILD_HOST
            ref.detail = "an absolute path outside /usr/lib and /System exists only on the build host"
        else:
            ref.detail = "a bare relative name is looked up relative to the process's working directory"
        if ref.target is not None:
            ref.verdict = BUNDLED
        return ref

    def _rpath(self, rest: str, stack: list[tuple[str, str]]) -> tuple[str | None, str]:
        tried: list[str] = []
        for entry, declared_by in stack:
            if entry.startswith("@loader_path"):
                base = posixpath.dirname(declared_by)
                target, _why = self._found(posixpath.join(base, entry[len("@loader_path"):].lstrip("/"), rest),
                                           "@rpath")
                if target is not None:
                    return target, f"@rpath via LC_RPATH {entry} of {declared_by}"
                tried.append(f"{entry} (of {declared_by})")
            else:
                tried.append(f"{entry} (of {declared_by}, not inside the wheel)")
        if not stack:
            return None, "@rpath with no LC_RPATH in this image or the images that load it"
        return None, f"@rpath/{rest} is in none of the rpaths: {', '.join(tried)}"


def _rpaths(facts: MachoFacts, member: str) -> list[tuple[str, str]]:
    sl = facts.image_slice(member)
    return [(r, member) for r in (sl.rpaths if sl else [])]


def resolve_references(facts: MachoFacts, members: set[str], policy: MachoPolicy) -> list[Reference]:
    """Every dylib reference of every image, in dyld's load order from libmxnet.dylib first."""
    resolver = _Resolver(facts, members, policy)
    stacks: dict[str, list[tuple[str, str]]] = {}
    order: list[str] = []
    refs: list[Reference] = []

    def visit(start: str, inherited: Iterable[tuple[str, str]] = ()) -> None:
        stacks[start] = _rpaths(facts, start) + list(inherited)
        queue = [start]
        while queue:
            member = queue.pop(0)
            order.append(member)
            sl = facts.image_slice(member)
            for kind, path in (sl.loads if sl else []):
                ref = resolver.resolve(member, kind, path, stacks[member])
                refs.append(ref)
                if ref.target is not None and ref.target not in stacks:
                    stacks[ref.target] = _rpaths(facts, ref.target) + stacks[member]
                    queue.append(ref.target)

    if facts.libmxnet in facts.images:
        visit(facts.libmxnet)
    # A bundled library libmxnet does not load directly is loaded through it (dlopen) or not at
    # all: it inherits libmxnet's rpaths. Any other image (an extension module) has only its own.
    bundle_dir = posixpath.dirname(facts.libmxnet) + "/lib/"
    inherited = stacks.get(facts.libmxnet, [])
    for member in sorted(facts.images):
        if member not in stacks:
            visit(member, inherited if member.startswith(bundle_dir) else [])
    return refs


def collect_macho(root: Path, members: list[str], tags: Iterable[Tag | str] | None, policy: MachoPolicy) -> MachoFacts:
    """Read every Mach-O file of the extracted wheel at ``root`` and resolve their references."""
    root = Path(root)
    facts = MachoFacts(arch=policy.arch, libmxnet=policy.libmxnet,
                       libmxnet_present=policy.libmxnet in set(members))
    facts.platform_tags, facts.non_macos_tags = parse_platform_tags(tags or [])
    files = [m for m in members if not m.endswith("/")]
    for member in files:
        path = root / member
        # libmxnet and everything in the bundle dir must be Mach-O: read them whatever they are,
        # so that an ELF or a truncated file there is reported; elsewhere, only Mach-O files count.
        expected = member == policy.libmxnet or member.startswith(posixpath.dirname(policy.libmxnet) + "/lib/")
        if not expected and not is_macho(path):
            continue
        try:
            facts.images[member] = read_macho(path)
        except (HarnessError, OSError) as exc:
            facts.errors[member] = str(exc)
    facts.references = resolve_references(facts, set(files), policy)
    # Apple silicon runs no code without a valid signature (ad hoc is enough); Intel slices are exempt.
    for member, info in facts.images.items():
        for sl in info.slices:
            if sl.arch.startswith("arm64"):
                try:
                    why = signature_problem(root / member, sl)
                except (OSError, ValueError, struct.error) as exc:
                    why = f"has an unreadable code signature ({exc})"
                facts.signatures.setdefault(member, {})[sl.arch] = why
    return facts


def tag_warnings(facts: MachoFacts) -> list[str]:
    """A platform tag above every binary's minimum is no failure (the wheel runs where pip puts it)
    but shuts out Macs it would run on: the report says so."""
    needs = [version_tuple(sl.min_os) for m in facts.images
             for sl in [facts.image_slice(m)] if sl is not None and sl.min_os]
    if not needs:
        return []
    highest = max(needs)
    return [f"the wheel is tagged {t.tag}, but its binaries need only macOS {'.'.join(map(str, highest))}: "
            f"pip refuses it on the macOS versions in between" for t in facts.platform_tags
            if facts.arch in t.archs and version_tuple(t.min_os) > highest]


def _join(items: Iterable[str], limit: int = 12) -> str:
    items = list(items)
    return ", ".join(items[:limit]) + (f", ... (+{len(items) - limit})" if len(items) > limit else "")


def summary_lines(facts: MachoFacts) -> list[str]:
    """The Mach-O part of the provenance report."""
    lib = posixpath.basename(facts.libmxnet)
    tags = _join(t.tag for t in facts.platform_tags) or "(no macosx_* tag)"
    lines = [f"platform tag: {tags}" + (f"; other tags: {_join(facts.non_macos_tags)}"
                                        if facts.non_macos_tags else "")]
    info: MachOInfo | None = facts.images.get(facts.libmxnet)
    if not facts.libmxnet_present:
        lines.append(f"{lib}: not in the wheel")
    elif info is None:
        lines.append(f"{lib}: {facts.errors.get(facts.libmxnet, 'not read')}")
    else:
        sl = facts.image_slice(facts.libmxnet)
        assert sl is not None, f"{lib} was read but has no slice"  # macho.read_macho reads at least one
        lines.append(f"{lib}: {'fat ' if info.fat else ''}{'+'.join(info.archs)}, minimum macOS "
                     f"{sl.min_os or '(none)'} ({sl.version_command or 'no version command'}), "
                     f"install name {sl.install_id or '(none)'}")
        lines.append(f"{lib} loads: {_join(sl.load_paths) or '(none)'}")
        lines.append(f"{lib} LC_RPATH: {_join(sl.rpaths) or '(none)'}")
    bundled = facts.bundled_images
    lines.append(f"bundled Mach-O images: {len(bundled)}: {_join(posixpath.basename(m) for m in bundled) or '(none)'}")
    counts: dict[str, int] = {}
    for r in facts.references:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    lines.append("dylib references: " + (", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "none"))
    checked = [why for per in facts.signatures.values() for why in per.values()]
    lines.append(f"arm64 code signatures: {len(checked)} checked, {sum(w is not None for w in checked)} invalid or missing")
    for member, why in sorted(facts.errors.items()):
        lines.append(f"unreadable: {member}: {why}")
    return lines
