"""What pip and the interpreter decide from a wheel's METADATA, entry points and file names
(issue 43), read as they read them:

- ``Requires-Python`` against the Python versions the wheel's tags admit (pip refuses an install
  whose interpreter the specifier excludes, whatever the tag says);
- each extension module's ABI suffix (``.cpython-311-x86_64-linux-gnu.so``) against the tags: the
  import system loads a module only under a suffix of its own ``importlib.machinery.EXTENSION_SUFFIXES``;
- ``entry_points.txt``'s console and GUI scripts against the names a venv already owns: pip
  writes each script into the venv's ``bin/`` and silently replaces a file of that name.

Each function returns problems in words (empty: none); the gates in ``tests/test_install_contract.py``
report them.
"""
from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, parse_tag
from packaging.utils import canonicalize_name

#: The newest minor (and micro) a tag's open range (``py3``) is tried up to. Python 3.30 is far
#: beyond any interpreter a wheel of this harness meets; the figure bounds a loop, nothing else.
_MAX_MINOR = 30
_MAX_MICRO = 30


def _tags(tag_strings: Iterable[str]) -> list[Tag]:
    return sorted({t for s in tag_strings for t in parse_tag(s)}, key=str)


def tag_python_versions(tag: Tag) -> list[tuple[int, int]]:
    """(major, minor) of every Python the tag's interpreter part admits: ``cp311``/``py311`` one,
    ``py3`` every 3.x. Other implementations (pp, ...) are left out: none is judged."""
    interp = tag.interpreter
    impl, digits = interp[:2], interp[2:]
    if impl not in ("cp", "py") or not digits.isdigit():
        return []
    major = int(digits[0])
    if len(digits) == 1:
        return [(major, minor) for minor in range(_MAX_MINOR + 1)]
    return [(major, int(digits[1:]))]


def requires_python_problems(tag_strings: Iterable[str], requires_python: str | None) -> list[str]:
    """Each interpreter tag no version of which ``Requires-Python`` admits (pip installs the wheel
    nowhere that tag promises), and a specifier pip cannot parse."""
    if requires_python is None:
        return []
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return [f"Requires-Python {requires_python!r} is not a valid specifier: pip refuses to install the wheel"]
    problems = []
    for interp in sorted({t.interpreter for t in _tags(tag_strings)}):
        versions = tag_python_versions(Tag(interp, "none", "any"))
        if not versions:
            continue
        admitted = [f"{a}.{b}" for a, b in versions
                    if any(spec.contains(f"{a}.{b}.{micro}", prereleases=True) for micro in range(_MAX_MICRO + 1))]
        if not admitted:
            shown = (f"Python {versions[0][0]}.{versions[0][1]}" if len(versions) == 1
                     else f"any Python {versions[0][0]}")
            problems.append(f"the tag's interpreter {interp} is {shown}, but Requires-Python {requires_python!r} "
                            f"excludes it: pip refuses to install the wheel wherever that tag applies")
    return problems


# ---------------------------------------------------------------------------------------------
# extension modules

def _multiarch(platform: str) -> str | None:
    """The ``MULTIARCH`` triplet (sysconfig) an interpreter of a Linux platform tag carries in its
    SOABI: ``linux_x86_64``/``manylinux_2_28_x86_64`` -> ``x86_64-linux-gnu``; musllinux -> ``-linux-musl``."""
    if platform.startswith(("manylinux_", "musllinux_")):   # manylinux_2_28_x86_64
        arch = platform.split("_", 3)[-1]
    elif "linux" in platform.split("_", 1)[0]:                 # linux_x86_64, manylinux2014_x86_64
        arch = platform.split("_", 1)[-1]
    else:
        return None
    libc = "musl" if platform.startswith("musllinux") else "gnu"
    return f"{arch}-linux-{libc}"


def extension_suffixes(tag: Tag) -> set[str]:
    """The suffixes a CPython interpreter matching ``tag`` imports extension modules under, as its
    ``importlib.machinery.EXTENSION_SUFFIXES`` lists them (``.cpython-311-x86_64-linux-gnu.so``,
    ``.abi3.so``, ``.so``); an abi3 tag promises every CPython 3 from its minor up, so only the
    suffixes all of them share (``.abi3.so``, ``.so``)."""
    versions = tag_python_versions(tag)
    multiarch = _multiarch(tag.platform)
    if not tag.interpreter.startswith("cp") or len(versions) != 1 or multiarch is None:
        return set()
    major, minor = versions[0]
    if tag.abi == "abi3":
        return {".abi3.so", ".so"}
    return {f".cpython-{major}{minor}-{multiarch}.so", ".abi3.so", ".so"}


def abi_suffix(member: str) -> str | None:
    """The ABI part of an extension module's file name (``.cpython-311-x86_64-linux-gnu.so``,
    ``.abi3.so``), or None for a name that carries none (``libmxnet.so``, ``libfoo.so.1``)."""
    name = PurePosixPath(member).name
    if not name.endswith(".so"):
        return None
    parts = name[: -len(".so")].split(".")
    if len(parts) < 2:
        return None
    tag = parts[-1]
    if tag == "abi3" or tag.startswith(("cpython-", "pypy", "graalpy")):
        return f".{tag}.so"
    return None


def extension_module_problems(tag_strings: Iterable[str], members: Iterable[str]) -> list[str]:
    """Each extension module whose ABI suffix no interpreter the tags promise would import."""
    tags = [t for t in _tags(tag_strings) if extension_suffixes(t)]
    if not tags:
        return []
    wanted = set().union(*(extension_suffixes(t) for t in tags))
    problems = []
    for member in members:
        suffix = abi_suffix(member)
        if suffix is not None and suffix not in wanted:
            problems.append(f"{member}: its suffix {suffix} is not one the tag{'s' if len(tags) > 1 else ''} "
                            f"{', '.join(map(str, tags))} import{'' if len(tags) > 1 else 's'} "
                            f"({', '.join(sorted(wanted))}): `import` can never load it")
    return problems


# ---------------------------------------------------------------------------------------------
# scripts

#: What ``python -m venv`` (and virtualenv) put in a venv's bin/ before any wheel is installed.
VENV_OWNED = ("python", "python3", "pip", "pip3", "activate", "activate.csh", "activate.fish",
              "Activate.ps1", "activate.nu", "activate.bat", "activate_this.py", "deactivate.bat")


def _versioned_owned(tag_strings: Iterable[str]) -> set[str]:
    """``python3.11``/``pip3.11`` for every Python the tags admit."""
    out = set()
    for tag in _tags(tag_strings):
        for major, minor in tag_python_versions(tag):
            out |= {f"python{major}.{minor}", f"pip{major}.{minor}"}
    return out


def dependency_scripts(requirements: Iterable[Requirement]) -> dict[str, str]:
    """script name -> the declared dependency that installs it, for those dependencies this
    Python has installed (their entry points read as the interpreter reads them); the rest are
    not known here."""
    owned: dict[str, str] = {}
    for req in requirements:
        if req.marker is not None and "extra" in str(req.marker):
            continue
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for ep in dist.entry_points:
            if ep.group in ("console_scripts", "gui_scripts"):
                owned.setdefault(ep.name, canonicalize_name(req.name))
    return owned


def script_problems(dist_info_dir: Path, tag_strings: Iterable[str], requirements: Iterable[Requirement]) -> list[str]:
    """Each console or GUI script named like a file the venv already owns (the interpreter, pip,
    the activate scripts) or like a declared dependency's script: pip overwrites it on install."""
    dist = importlib.metadata.PathDistribution(dist_info_dir)
    scripts = [ep for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")]
    owned = {name: "the venv (python -m venv)" for name in (*VENV_OWNED, *_versioned_owned(tag_strings))}
    for name, dep in dependency_scripts(requirements).items():
        owned.setdefault(name, f"{dep}, which this wheel declares in Requires-Dist")
    problems = []
    for ep in scripts:
        owner = owned.get(ep.name) or owned.get(ep.name.lower())
        if owner is not None:
            problems.append(f"{ep.group} {ep.name} = {ep.value}: {ep.name} belongs to {owner}; installing "
                            f"this wheel replaces it in the venv's bin/")
    return problems
