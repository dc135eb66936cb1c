"""What the install map (build_steps.readers.install_map) says about a wheel, as facts for the
layout, start-up and ownership gates: each a list of problems, empty when the wheel is fine.

Read from the install map, never from raw member names: ``mxnet-2.0.data/purelib/x.pth`` is a
start-up file in site-packages, ``mxnet-2.0.data/data/share/x.pth`` is not on the import path but is
still refused (a start-up file anywhere is a wheel that means to run code without an import).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import canonicalize_name

from ..profile_data import SHADOWING_NAMES, Profile, dependency_top_level
from .install_map import InstallMap, Placement, build_install_map, collisions
from .wheel_name import platform_of

#: Module names the interpreter imports at start-up by itself (site.py's sitecustomize/usercustomize).
STARTUP_MODULES = ("sitecustomize", "usercustomize")
#: Native code by file name (ELF/Mach-O members are found by their bytes besides).
_NATIVE_SUFFIX = re.compile(r"\.(so|dylib|pyd|dll)(\.[0-9.]+)?$")
#: A data-scheme path that is a site-packages directory of some layout: the file lands on the import
#: path by way of the data scheme, where no lib-scheme rule sees it.
_SITE_IN_DATA = re.compile(r"^(lib|lib64|Lib)/(python[0-9.]+/)?(site|dist)-packages/")


@dataclass
class InstallFacts:
    install: dict[str, Any] = field(default_factory=dict)          # InstallMap.to_json()
    #: the wheel carries native code or a platform tag: {"tags": [...], "native": [members...]}
    platform: dict[str, Any] = field(default_factory=dict)
    #: a platform wheel marked Root-Is-Purelib: true (the reason), or ""
    purelib_problem: str = ""
    #: members pip refuses or that land outside their scheme's place: "member: why"
    layout_problems: list[str] = field(default_factory=list)
    #: start-up files: {"member", "installed", "first_line", "allowed" (reason or "")}
    startup: list[dict[str, Any]] = field(default_factory=list)
    #: top-level names that belong to someone else: "name (members...): why"
    ownership_problems: list[str] = field(default_factory=list)
    #: the wheel's top-level names in site-packages
    top_level: list[str] = field(default_factory=list)


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            line = fh.readline(200)
    except OSError as exc:
        return f"(unreadable: {exc})"
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    return text if text.strip() else "(an empty first line)"


def _is_startup(p: Placement) -> bool:
    """A .pth file anywhere; a sitecustomize/usercustomize module at the top of site-packages, or
    by that file or package name anywhere in the other schemes (where a data path can be an
    import path of some layout)."""
    parts = p.path.split("/")
    if parts[-1].endswith(".pth"):
        return True
    candidates = [parts[0]] if p.in_site_packages else parts
    return any(c.split(".", 1)[0] in STARTUP_MODULES and (c.endswith(".py") or c.endswith(".so") or c != parts[-1])
               for c in candidates)


def _native(members: list[str], elf_members: list[str]) -> list[str]:
    found = set(elf_members) | {m for m in members if _NATIVE_SUFFIX.search(m)}
    return sorted(found)


def _where(imap: InstallMap, p: Placement) -> str:
    return p.path if p.in_site_packages else f"<{p.scheme}>/{p.path}"


def _dependency_names(requires_dist: Iterable[Requirement | str] | None) -> dict[str, set[str]]:
    """Top-level name -> the declared distributions (any Requires-Dist line, extras included)."""
    out: dict[str, set[str]] = {}
    for line in requires_dist or []:
        try:
            name = canonicalize_name(Requirement(str(line)).name)
        except InvalidRequirement:
            continue
        for top in dependency_top_level(name):
            out.setdefault(top, set()).add(name)
    return out


def collect_install_facts(root: Path, members: Iterable[str], wheel_info: Message | None,
                          tags: Iterable[Tag | str] | None, requires_dist: Iterable[Requirement | str] | None,
                          profile: Profile, elf_members: Iterable[str] = ()) -> InstallFacts:
    imap = build_install_map(members, wheel_info)
    facts = InstallFacts(install=imap.to_json())
    root = Path(root)

    # Platform wheels belong in platlib.
    platforms = sorted({platform_of(t) for t in tags or []} - {"any"})
    native = _native(list(members), list(elf_members))
    facts.platform = {"tags": platforms, "native": native[:20], "native_count": len(native)}
    if (platforms or native) and imap.root_is_purelib:
        why = (f"its platform tag says {', '.join(platforms)}" if platforms else "") + \
              (" and " if platforms and native else "") + \
              (f"it carries native code ({', '.join(native[:3])}{' ...' if len(native) > 3 else ''})" if native else "")
        facts.purelib_problem = (
            f"WHEEL says Root-Is-Purelib: {imap.root_is_purelib_text}, but {why}: pip installs its root into "
            "purelib (lib/pythonX.Y/site-packages), which on Fedora/RHEL and --prefix installs is not platlib "
            "(lib64/...), where the platform wheels it reaches by RUNPATH ($ORIGIN/../nvidia/...) are installed")

    # Every member where pip puts it, and pip installs it at all.
    facts.layout_problems += [f"{member}: {why}" for member, why in imap.refused]
    for p in imap.placements.values():
        if p.scheme == "data" and _SITE_IN_DATA.match(p.path):
            facts.layout_problems.append(
                f"{p.member}: lands in <data>/{p.path}, a site-packages directory, by way of the data "
                "scheme: on the import path in one layout and nowhere in another, and seen by no "
                "site-packages rule; ship it in the package (or .data/platlib) instead")

    for path, owners in collisions(imap):
        facts.layout_problems.append(
            f"{' and '.join(owners)}: all install to {path} in site-packages (purelib and platlib are one "
            "directory in most layouts): pip writes one over the other; ship each file once")

    # Code that runs at interpreter start-up.
    for p in sorted(imap.placements.values(), key=lambda p: p.member):
        if _is_startup(p):
            installed = _where(imap, p)
            facts.startup.append({"member": p.member, "installed": installed,
                                  "first_line": _first_line(root / p.member),
                                  "allowed": profile.startup_allowed.get(installed, "")})

    # Top-level names: the wheel's own, not a dependency's and not a well-known shadowing name.
    tops = imap.top_level()
    facts.top_level = sorted(tops)
    deps = _dependency_names(requires_dist)
    for name, owners in sorted(tops.items()):
        what = f"{name}{'/' if any('/' in imap.placements[m].path for m in owners) else ''}"
        shown = ", ".join(owners[:3]) + (f" (+{len(owners) - 3} more)" if len(owners) > 3 else "")
        if name in deps:
            facts.ownership_problems.append(
                f"{what} ({shown}) belongs to {', '.join(sorted(deps[name]))}, which this wheel declares "
                "in Requires-Dist: installing it overwrites that distribution's files (and uninstalling "
                "either removes the other's); ship it under the wheel's own package")
        elif name in SHADOWING_NAMES and name not in STARTUP_MODULES:
            facts.ownership_problems.append(
                f"{what} ({shown}) is a well-known name ({name}) that shadows the standard library or "
                "another project's module for every program on the interpreter; move it under the "
                "wheel's own package (or leave it out of the wheel)")
    return facts

