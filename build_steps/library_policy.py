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

#: Libraries a Python process commonly has loaded before ``import mxnet``, and what loads them. A
#: wheel that bundles one under its plain SONAME gets the process's copy instead of its own: the
#: loader matches a NEEDED against the SONAMEs of loaded objects before it searches any RUNPATH
#: (issue 40: every runtime gate of the real fork's wheel found the host's libcrypto.so.3, loaded by
#: ``import ssl``). The bundle step grafts every library under ``<stem>-<hash8>.so.N``
#: (build_steps.bundle.graft); the gate tests/test_bundle_grafted.py fails a wheel that did not.
COMMONLY_LOADED = {
    "libcrypto": "OpenSSL, loaded by Python's _ssl and _hashlib (import ssl, hashlib, urllib, requests)",
    "libssl": "OpenSSL, loaded by Python's _ssl (import ssl, urllib, requests)",
    "libz": "zlib, loaded by Python's zlib module (gzip, zipfile, numpy.lib.npyio, PIL)",
    "libbz2": "bzip2, loaded by Python's _bz2 (import bz2, tarfile, shutil.unpack_archive)",
    "liblzma": "xz, loaded by Python's _lzma (import lzma, tarfile)",
    "libffi": "libffi, loaded by Python's _ctypes (import ctypes, which mxnet's own base.py does)",
    "libexpat": "expat, loaded by Python's pyexpat (xml.etree, plistlib)",
    "libuuid": "libuuid, loaded by Python's _uuid (import uuid)",
    "libsqlite3": "SQLite, loaded by Python's _sqlite3 (IPython's history, many tools)",
    "libmpdec": "libmpdec, loaded by Python's _decimal (import decimal)",
    "libreadline": "readline, loaded by the interactive interpreter and IPython",
    "libncursesw": "ncurses, loaded with readline by the interactive interpreter",
    "libtinfo": "terminfo, loaded with readline by the interactive interpreter",
    "libstdc++": "the C++ runtime, loaded by every C++ extension (numpy, scipy, torch, onnxruntime)",
    "libgcc_s": "the GCC runtime, loaded by every C++ extension and by glibc's pthread_cancel",
    "libgomp": "GNU OpenMP, loaded by scikit-learn, torch and system OpenBLAS builds",
    "libgfortran": "the Fortran runtime, loaded by numpy/scipy built against the system OpenBLAS",
    "libquadmath": "loaded with libgfortran by numpy/scipy built against the system OpenBLAS",
    "libopenblas": "OpenBLAS, loaded by numpy/scipy built against the system's",
    "libblas": "the BLAS alternative, loaded by numpy/scipy built against the system's",
    "liblapack": "the LAPACK alternative, loaded by numpy/scipy built against the system's",
    "libpng16": "libpng, loaded by Pillow or matplotlib built against the system's",
    "libjpeg": "libjpeg, loaded by Pillow built against the system's",
    "libtiff": "libtiff, loaded by Pillow built against the system's",
    "libwebp": "libwebp, loaded by Pillow built against the system's",
    "libfreetype": "FreeType, loaded by Pillow or matplotlib built against the system's",
}


def plain_commonly_loaded(name: str) -> str | None:
    """Why ``name`` (a bundled file name or SONAME) is a commonly loaded library under its plain,
    ungrafted name (``libcrypto.so.3``; not ``libcrypto-1a2b3c4d.so.3``), or None."""
    m = re.match(r"^(.+?)\.so(?:\.|$)", name)
    if m is None or m.group(1) not in COMMONLY_LOADED:
        return None
    return COMMONLY_LOADED[m.group(1)]


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
