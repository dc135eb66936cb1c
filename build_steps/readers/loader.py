"""Resolve the wheel's shared-library closure the way the dynamic loader will on a clean host.

Rules taken from ld.so(8), restricted to what a wheel controls:
- DT_RUNPATH applies only to the object that carries it, never to the libraries it pulls in; so
  every bundled library must reach its own NEEDED through its own RUNPATH (usually ``$ORIGIN``).
- DT_RPATH (only when there is no RUNPATH) is searched for the object and then for its loaders;
  here the loader chain is libmxnet.so itself, the one object that dlopen()s the rest.
- ``$ORIGIN`` / ``${ORIGIN}`` is the directory of the object that carries the entry.
- an object without DT_RUNPATH (with DT_RPATH or with neither) also gets the DT_RPATH of the
  object that loaded it; for the wheel that is libmxnet.so's.
- a NEEDED with a slash in it is no library name but a path, opened as given (relative to the
  process's working directory when not absolute), with no search at all.
A NEEDED that is not found inside the wheel is acceptable only when the profile's host baseline
provides it (Profile.host_baseline, [host_baseline] of profiles.toml: glibc, GCC runtime, NVIDIA
driver, system CUDA toolkit) or when a pip dependency the wheel declares provides it and the
object's own search path reaches that dependency's directory; in both cases its SONAME major must
be one the profile accepts (Profile.soname_majors, from its CUDA stack in profiles.toml: under a
CUDA 13 stack libcudart.so.11.0 is not the CUDA runtime).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from packaging.utils import canonicalize_name

from ..errors import NotElfError
from .elf import ELF_MAGIC, expand_origin, is_elf, normalize_origin, read_dynamic
from ..library_policy import NEVER_BUNDLE, baseline_group, major_problem, pip_library_prefix
from ..profile_data import Profile

#: what read_by_inode's reader returns (the seen map keeps it per inode)
T = TypeVar("T")
BUNDLED, HOST, PIP, UNRESOLVED = "bundled", "host", "pip", "unresolved"
#: Why an UNRESOLVED NEEDED fails (Resolution.rule), so each fault is reported by one gate, once.
RULE_SLASH, RULE_NOT_ELF, RULE_MAJOR, RULE_PIP, RULE_UNREACHABLE, RULE_MISSING = (
    "needed-with-slash", "not-elf", "soname-major", "pip-not-reached", "bundled-unreachable", "missing")


@dataclass
class ObjectInfo:
    member: str
    soname: str | None
    needed: list[str]
    search_tag: str | None          # "RUNPATH", "RPATH" or None
    search_path: list[str]          # the raw entries of that tag
    error: str | None = None

    @property
    def has_origin(self) -> bool:
        return any(_norm(e).startswith("$ORIGIN") for e in self.search_path)


@dataclass
class Resolution:
    by: str             # member that NEEDs it
    needed: str         # the SONAME
    verdict: str        # bundled / host / pip / unresolved
    found: str | None   # member (bundled), RUNPATH entry (pip) or baseline group (host)
    detail: str = ""
    rule: str = ""      # for UNRESOLVED: which loader rule fails (RULE_*)


@dataclass
class Closure:
    objects: dict[str, ObjectInfo] = field(default_factory=dict)  # member -> ObjectInfo
    resolutions: list[Resolution] = field(default_factory=list)

    def unresolved(self) -> list[Resolution]:
        return [r for r in self.resolutions if r.verdict == UNRESOLVED]

    def for_object(self, member: str) -> list[Resolution]:
        return [r for r in self.resolutions if r.by == member]

    def to_json(self) -> dict[str, Any]:
        return {"objects": {k: asdict(v) for k, v in self.objects.items()},
                "resolutions": [asdict(r) for r in self.resolutions]}


_norm = normalize_origin


def _expand(entry: str, origin_dir: Path) -> Path:
    # An empty element is taken as the object's own directory (the wheel's closure never
    # depends on the process's current directory).
    return expand_origin(entry, origin_dir) if entry else origin_dir


def read_by_inode(path: Path, read: Callable[[Path], T], seen: dict[tuple[int, int], T] | None) -> T:
    """``read(path)``, remembered in ``seen`` by inode: the SONAME-named twin of a bundled
    library, which extraction links to the same file, is parsed once."""
    if seen is None:
        return read(path)
    st = path.stat()
    key = (st.st_dev, st.st_ino)
    if key not in seen:
        seen[key] = read(path)
    return seen[key]


def object_info(root: Path, member: str, seen: dict[tuple[int, int], Any] | None = None) -> ObjectInfo:
    """Dynamic facts of one member (``seen``: see read_by_inode)."""
    path = Path(root) / member
    try:
        dyn = read_by_inode(path, read_dynamic, seen)
    except NotElfError as exc:
        return ObjectInfo(member, None, [], None, [], error=f"not an ELF shared object: {exc}")
    except OSError as exc:
        return ObjectInfo(member, None, [], None, [], error=f"cannot read: {exc}")
    return ObjectInfo(member=member, soname=dyn.soname, needed=list(dyn.needed),
                      search_tag=dyn.search_tag, search_path=list(dyn.search_path or []))


def _inside(root: Path, path: Path) -> str | None:
    """The member name of ``path`` when it lies inside the extracted wheel, else None."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def resolve_closure(root: Path, libmxnet: str, bundled: list[str], profile: Profile,
                    declared: set[str]) -> Closure:
    """Resolve every NEEDED of ``libmxnet`` and of each bundled ELF member (``mxnet/lib/...``).

    ``declared`` holds the canonical names of the wheel's hard Requires-Dist distributions.
    """
    root = Path(root)
    declared = {canonicalize_name(d) for d in declared}
    closure = Closure()
    seen: dict[tuple[int, int], Any] = {}
    for member in [libmxnet, *bundled]:
        if (root / member).is_file():
            closure.objects[member] = object_info(root, member, seen)
    top = closure.objects.get(libmxnet)
    top_rpath = top.search_path if top and top.search_tag == "RPATH" else []
    # Every bundled file, by basename: to tell "missing" from "bundled but not reachable".
    by_name: dict[str, str] = {}
    for member in bundled:
        by_name.setdefault(member.rsplit("/", 1)[-1], member)

    for member, obj in closure.objects.items():
        if obj.error:
            continue
        origin = (root / member).parent
        entries = list(obj.search_path)
        if obj.search_tag != "RUNPATH" and member != libmxnet:
            entries += top_rpath
        for name in obj.needed:
            closure.resolutions.append(_resolve_one(root, member, obj, entries, origin, name,
                                                    profile, declared, by_name))
    return closure


def _magic(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(8)


def _resolve_one(root: Path, member: str, obj: ObjectInfo, entries: list[str], origin: Path, name: str,
                 profile: Profile, declared: set[str], by_name: dict[str, str]) -> Resolution:
    if "/" in name:
        return Resolution(member, name, UNRESOLVED, None, rule=RULE_SLASH, detail=(
            f"NEEDED entry {name!r} contains a slash: ld.so opens it as a path"
            + ("" if name.startswith("/") else " relative to the process's working directory")
            + ", never through RUNPATH, so it loads only where that path happens to exist; fix: link "
            f"against the library by its SONAME (patchelf --replace-needed '{name}' {name.rsplit('/', 1)[-1]})"))
    for entry in entries:
        candidate = _expand(entry, origin) / name
        inside = _inside(root, candidate)
        if inside is not None and candidate.is_file():
            if is_elf(candidate):
                return Resolution(member, name, BUNDLED, inside, f"via {obj.search_tag} entry {entry}")
            return Resolution(member, name, UNRESOLVED, None, rule=RULE_NOT_ELF, detail=(
                f"{inside} is bundled under the library's name but is not an ELF file (it starts with "
                f"{_magic(candidate)!r}, not {ELF_MAGIC!r}): the loader fails with 'invalid ELF header'; "
                "fix: bundle the library itself, not a linker script, text or a broken copy"))
    problem = major_problem(name, profile)
    prefix = pip_library_prefix(name, profile)
    if problem and (prefix is not None or baseline_group(name, profile) is not None):
        return Resolution(member, name, UNRESOLVED, None, rule=RULE_MAJOR,
                          detail=f"{problem}; fix: rebuild against the {profile.name} profile's libraries")
    if prefix is not None:
        want = profile.pip_libraries[prefix]
        dist = profile.pip_distributions.get(prefix)
        has_entry = want in [_norm(e) for e in entries]
        has_dist = dist is None or canonicalize_name(dist) in declared
        if has_entry and has_dist:
            return Resolution(member, name, PIP, want, f"from pip {dist}")
        why = []
        if not has_entry:
            why.append(f"its {obj.search_tag or 'RUNPATH'} lacks {want}")
        if not has_dist:
            why.append(f"METADATA does not require {dist}")
        return Resolution(member, name, UNRESOLVED, None,
                          f"{name} is pip-provided ({dist}) but " + " and ".join(why), rule=RULE_PIP)
    group = baseline_group(name, profile)
    if group is not None:
        return Resolution(member, name, HOST, group, f"host baseline ({group})")
    if name in by_name:
        return Resolution(member, name, UNRESOLVED, None,
                          f"{name} is bundled as {by_name[name]} but {member} cannot reach it: "
                          f"its {obj.search_tag or 'RUNPATH'} is {':'.join(obj.search_path) or '(none)'}; "
                          "fix: give it RUNPATH $ORIGIN (patchelf --set-rpath '$ORIGIN')", rule=RULE_UNREACHABLE)
    never = next((why for prefix, why in NEVER_BUNDLE.items() if name.startswith(prefix)), None)
    fix = (f"fix: it cannot be bundled ({never}); link {member.rsplit('/', 1)[-1]} without it"
           if never else "fix: bundle it into mxnet/lib (build_steps.bundle) or add the pip dependency "
           "that ships it to Requires-Dist and its directory to the RUNPATH")
    return Resolution(member, name, UNRESOLVED, None,
                      f"{name} is not bundled, not in the {profile.name} profile's host baseline "
                      f"({', '.join(profile.host_baseline) or 'none'}) and not provided by a declared pip "
                      f"dependency; {fix}", rule=RULE_MISSING)


def reached_dirs(root: Path, closure: Closure, bundle_dir: str) -> list[str]:
    """Every directory of the install tree (site-packages, which the extraction root stands for)
    that some ELF's RUNPATH/RPATH reaches, plus ``bundle_dir``: what the loader finds there is
    shipped by this wheel as much as mxnet/lib is (``$ORIGIN/../nvidia/cu13/lib`` leaves mxnet/)."""
    root = Path(root)
    dirs = {bundle_dir.rstrip("/")}
    for member, obj in closure.objects.items():
        origin = (root / member).parent
        for entry in obj.search_path:
            inside = _inside(root, _expand(entry, origin))
            if inside is not None and inside not in ("", "."):
                dirs.add(inside)
    return sorted(dirs)
