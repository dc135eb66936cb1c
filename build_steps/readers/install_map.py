"""Where pip puts each member of a wheel: the install model the layout, start-up and ownership
gates read instead of raw member names.

The rules are pip's installer's (``pip._internal.operations.install.wheel``), which follow the
wheel spec (PEP 427, "Installing a wheel"):
- a member under a top-level directory whose name ends in ``.data`` is ``<x>.data/<scheme>/<path>``
  and lands at ``<path>`` under that scheme's root; ``scheme`` is one of purelib, platlib, headers,
  scripts, data. Any other key, or a file directly in ``<x>.data/<key>``, makes pip refuse the
  wheel ("Unknown scheme key", "Unexpected file");
- every other member (the ``.dist-info`` included) lands in the root scheme: purelib when the
  ``WHEEL`` file says ``Root-Is-Purelib: true`` (case-insensitive), platlib otherwise (a missing
  header counts as false, as pip reads it).
On Debian/Ubuntu purelib and platlib are one directory; on Fedora/RHEL and ``--prefix`` installs
platlib is ``lib64/``: a platform wheel marked purelib puts its libraries where the platlib
wheels it reaches by RUNPATH (nvidia-*) are not.
"""
from __future__ import annotations

import sysconfig
from collections.abc import Iterable, Mapping
from email.message import Message
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: pip's scheme keys (``pip._internal.models.scheme.SCHEME_KEYS``).
SCHEMES = ("purelib", "platlib", "headers", "scripts", "data")
#: The schemes that are site-packages (the import path).
LIB_SCHEMES = ("purelib", "platlib")
#: Suffixes under which a site-packages file is importable as a top-level module.
_MODULE_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


@dataclass(frozen=True)
class Placement:
    member: str
    #: one of SCHEMES
    scheme: str
    #: where it lands, relative to its scheme's root (site-packages for purelib/platlib)
    path: str

    @property
    def in_site_packages(self) -> bool:
        return self.scheme in LIB_SCHEMES


@dataclass
class InstallMap:
    #: the WHEEL file's Root-Is-Purelib value as written (None: no such header, or no WHEEL)
    root_is_purelib_text: str | None
    root_is_purelib: bool
    #: member -> Placement, for every member pip installs
    placements: dict[str, Placement] = field(default_factory=dict)
    #: (member, why pip refuses the wheel because of it)
    refused: list[tuple[str, str]] = field(default_factory=list)

    @property
    def root_scheme(self) -> str:
        return "purelib" if self.root_is_purelib else "platlib"

    def in_scheme(self, *schemes: str) -> list[Placement]:
        return [p for p in self.placements.values() if p.scheme in schemes]

    def site_packages(self) -> dict[str, str]:
        """site-packages-relative path -> member, for everything that lands there."""
        return {p.path: p.member for p in self.placements.values() if p.in_site_packages}

    def top_level(self) -> dict[str, list[str]]:
        """Top-level import names of site-packages (``mxnet`` for ``mxnet/...``, ``six`` for
        ``six.py``) -> the members that make them; ``.dist-info`` directories excluded."""
        out: dict[str, list[str]] = {}
        for path, member in sorted(self.site_packages().items()):
            first, _, rest = path.partition("/")
            name: str | None
            if rest:
                if first.endswith(".dist-info"):
                    continue
                name = first
            else:
                name = _module_name(first)
                if name is None:
                    continue
            out.setdefault(name, []).append(member)
        return out

    def destination(self, member: str, layout: Mapping[str, Path]) -> Path | None:
        """Where ``member`` lands under ``layout`` (scheme -> directory), None when not installed."""
        p = self.placements.get(member)
        return None if p is None else Path(layout[p.scheme]) / p.path

    def to_json(self) -> dict[str, Any]:
        return {"root_is_purelib": self.root_is_purelib, "root_is_purelib_text": self.root_is_purelib_text,
                "root_scheme": self.root_scheme,
                "schemes": {s: sorted(p.path for p in self.in_scheme(s)) for s in SCHEMES
                            if self.in_scheme(s)},
                "data_members": {p.member: [p.scheme, p.path] for p in self.placements.values()
                                 if p.member != p.path},
                "refused": [list(r) for r in self.refused], "top_level": sorted(self.top_level())}


def collisions(imap: InstallMap) -> list[tuple[str, list[str]]]:
    """(path, [members]) for every site-packages path two members install to: purelib and
    platlib are one directory on Debian/Ubuntu and with --target, so the later member silently
    replaces the earlier one there."""
    by_path: dict[str, list[str]] = {}
    for p in imap.placements.values():
        if p.in_site_packages:
            by_path.setdefault(p.path, []).append(p.member)
    return sorted((path, members) for path, members in by_path.items() if len(members) > 1)


def installed_view(root: Path, imap: InstallMap, view: Path) -> dict[str, str] | None:
    """When members under ``<x>.data/purelib|platlib`` move on install, a tree at ``view`` with
    every site-packages member at its installed path and the rest at their member names (hard
    links into the extraction at ``root``); returns view name -> member, or None when nothing
    moves (the extraction is already site-packages as pip lays it out)."""
    if not any(p.in_site_packages and p.path != p.member for p in imap.placements.values()):
        return None
    import os
    import shutil
    names: dict[str, str] = {}
    for p in imap.placements.values():
        name = p.path if p.in_site_packages else p.member
        names[name] = p.member  # a collision: the later member wins, as pip writes it last
    if view.exists():
        shutil.rmtree(view)
    for name, member in names.items():
        target = view / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(root / member, target)
        except OSError:
            shutil.copy2(root / member, target)
    return names


def _module_name(filename: str) -> str | None:
    """``six.py`` -> ``six``; ``_x.cpython-311-x86_64-linux-gnu.so`` -> ``_x``; others None."""
    for suffix in _MODULE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)].split(".", 1)[0] or None
    if filename.endswith(".pth"):
        return None  # not a module: a start-up file (its own gate)
    return None


def _root_is_purelib(wheel_info: Message | None) -> tuple[str | None, bool]:
    text = wheel_info.get("Root-Is-Purelib") if wheel_info is not None else None
    return text, (text or "").strip().lower() == "true"


def build_install_map(members: Iterable[str], wheel_info: Message | None) -> InstallMap:
    """The install map of a wheel's file members (directories excluded, as pip skips them)."""
    text, purelib = _root_is_purelib(wheel_info)
    out = InstallMap(root_is_purelib_text=text, root_is_purelib=purelib)
    root = out.root_scheme
    for member in members:
        if member.endswith("/"):
            continue
        first, _, rest = member.partition("/")
        if not (rest and first.endswith(".data")):
            out.placements[member] = Placement(member, root, member)
            continue
        key, _, sub = rest.partition("/")
        if not sub:
            out.refused.append((member, f"a file directly in {first}/ (pip: \"Unexpected file in "
                                        f"{first}: .data directory contents should be named like "
                                        "'<scheme key>/<path>'\")"))
        elif key not in SCHEMES:
            out.refused.append((member, f"{first}/{key}/ is no install scheme (pip: \"Unknown scheme "
                                        f"key\"; the keys are {', '.join(sorted(SCHEMES))})"))
        else:
            out.placements[member] = Placement(member, key, sub)
    return out


# ---------------------------------------------------------------------------------------------
# scheme roots: where each scheme is on disk for an install

def prefix_layout(prefix: Path, distribution: str) -> dict[str, Path]:
    """The scheme roots of a ``pip install`` into the environment at ``prefix`` (a venv) with this
    interpreter, as pip computes them: sysconfig's venv/posix_prefix paths, headers in
    ``include/site/pythonX.Y/<distribution>`` (pip's rule inside a virtual environment)."""
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    paths = sysconfig.get_paths(scheme, vars={"base": str(prefix), "platbase": str(prefix),
                                              "installed_base": str(prefix), "installed_platbase": str(prefix)})
    version = f"python{sysconfig.get_python_version()}"
    return {"purelib": Path(paths["purelib"]), "platlib": Path(paths["platlib"]),
            "scripts": Path(paths["scripts"]), "data": Path(paths["data"]),
            "headers": Path(prefix) / "include" / "site" / version / distribution}


def target_layout(target: Path, distribution: str) -> dict[str, Path]:
    """The scheme roots of ``pip install --target DIR``: pip installs with the home scheme into a
    temporary directory, then moves the lib directory's entries and every other top-level entry of
    the home directory (bin/, include/, share/...) into DIR. Headers as pip run from a virtual
    environment (the harness's) places them."""
    target = Path(target)
    return {"purelib": target, "platlib": target, "scripts": target / "bin", "data": target,
            "headers": target / "include" / "site" / f"python{sysconfig.get_python_version()}" / distribution}
