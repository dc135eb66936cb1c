"""The library policy: which shared libraries the host provides, which a wheel may never bundle,
and how a NEEDED is matched against a profile's host baseline, pip libraries and SONAME majors.

The policy's data (the baseline groups, the pip libraries, the majors) is the profile's, from
profiles.toml; the rules that read it are here, so the bundle step and every gate apply one rule.

``profile`` arguments are build_steps.profile_data.Profile objects (imported for the annotations only).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .profile_data import Profile


#: Libraries the host provides and a wheel must never bundle, matched on the whole name
#: (``libc`` must not swallow ``libcharls``, ``libm`` not ``libmount``). The fork's skip list,
#: plus the GCC runtimes it forgot (docs/background.md, G8): libgomp (the host OpenMP runtime libmxnet itself
#: uses; two copies in one process fight) and libquadmath (GPL: must not be redistributed).
HOST_LIBRARIES = (
    "ld-linux", "ld-linux-x86-64", "libc", "libm", "libdl", "libpthread", "librt", "libutil",
    "libnsl", "libresolv", "libanl", "libmvec", "libstdc++", "libgcc_s", "libatomic",
    "libgomp", "libquadmath",
    # CUDA: the driver comes with the host, the toolkit libraries from pip wheels or the toolkit.
    "libcuda", "libcudart", "libcublas", "libcublasLt", "libcudnn", "libnccl", "libnvrtc",
    "libcufft", "libcusolver", "libcusparse", "libcurand", "libnvJitLink", "libnvToolsExt",
    "libnvidia",
)

#: Libraries that must never be inside a wheel, whatever the flavor, and why.
NEVER_BUNDLE = {
    "libcuda.so": "libcuda.so.1 is the NVIDIA driver's; a bundled copy breaks every other driver version",
    "libquadmath.so": "libquadmath is GPL and must not be redistributed in the wheel",
}

#: libomp/libiomp5/libgomp: the OpenMP runtimes libmxnet may link (the fork's pattern).
OPENMP_RUNTIME_RE = re.compile(r"^lib(?:omp|iomp5|gomp)\b")


@lru_cache(maxsize=None)
def _prefix_re(names: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-name SONAME prefixes (``libc`` matches libc.so.6, not libcharls.so)."""
    return re.compile(r"^(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                      + r")(?:\.so|-|$)")


def is_host_library(soname: str) -> bool:
    """True when ``soname`` is provided by the host (glibc, GCC runtime, NVIDIA driver/toolkit)."""
    return bool(_prefix_re(HOST_LIBRARIES).match(soname))


def baseline_group(soname: str, profile: Profile) -> str | None:
    """The group of ``profile``'s host baseline ([host_baseline] of profiles.toml) that provides
    ``soname``, or None."""
    for group, names in profile.host_baseline.items():
        if _prefix_re(tuple(names)).match(soname):
            return group
    return None


def _longest_prefix(soname: str, prefixes: Iterable[str]) -> str | None:
    """The longest of ``prefixes`` that ``soname`` starts with as a whole name, or None."""
    best = None
    for prefix in prefixes:
        if re.match(re.escape(prefix) + r"(?:\.so|-|$)", soname) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def pip_library_prefix(soname: str, profile: Profile) -> str | None:
    """The profile.pip_libraries key that ``soname`` belongs to (longest match), or None."""
    return _longest_prefix(soname, profile.pip_libraries)


def soname_major(soname: str) -> str | None:
    """The major version of a SONAME (``libcudart.so.11.0`` -> ``"11"``), None when it has none."""
    m = re.search(r"\.so\.(\d+)", soname)
    return m.group(1) if m else None


def major_problem(soname: str, profile: Profile) -> str | None:
    """Why ``soname`` is not a major the profile accepts (profile.soname_majors), or None."""
    best = _longest_prefix(soname, profile.soname_majors)
    if best is None:
        return None
    majors, what = profile.soname_majors[best]
    have = soname_major(soname)
    if have in majors:
        return None
    want = " or ".join(f"{best}.so.{m}" for m in majors)
    got = f"major {have}" if have else "no major version (a development link name)"
    return (f"{soname} has {got}, but the {profile.name} profile accepts only {want} ({what}): the loader "
            f"asks for that exact file name, which a host with {what} does not have")
