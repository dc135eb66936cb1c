"""A CUDA stack: everything that changes with the CUDA major, as profiles.toml states it under
``[cuda_stacks.<name>]`` and a CUDA profile names with ``cuda_stack``.

The toolkit wheels ``--cuda-from-wheels`` builds against (and their lock), the libraries the wheel
leaves to pip (RUNPATH entry and distribution), the SONAME majors a NEEDED may have, and what the
cuBLAS gate knows about this major's cuBLAS and the drivers it needs. Code reads these facts from
the profile; none of them is written in code, so a flavor of another CUDA major is a data change.

``profile`` arguments are build_steps.profile_data.Profile objects (not imported here: profile_data
builds its profiles with this module).
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class CublasPolicy:
    """What the cuBLAS gate (tests/probes/cublas_probe.py) judges a cuBLAS/driver pair by."""
    #: the oldest NVIDIA driver (R-number) any library of this CUDA major runs on
    driver_floor: int
    #: the driver the pinned cuBLAS needs: what every driver trap tells the user to install
    pin_driver: int
    #: site-packages dirs of older pip layouts of cuBLAS, searched after the pip library's own
    legacy_pip_dirs: tuple[str, ...] = ()
    #: cuBLAS from this version ("13.2") needs pin_driver for large GEMMs; "" when no such trap is known
    new_driver_from: str = ""
    #: the cuBLAS release known to crash in syrk ("13.1.1.3"); "" when none is known
    syrk_crash: str = ""
    #: the first cuBLAS known to compute syrk correctly ("13.5"); "" when none is known
    syrk_fixed: str = ""


@dataclass(frozen=True)
class CudaStack:
    """One CUDA major's stack (a ``[cuda_stacks.<name>]`` table of profiles.toml)."""
    name: str
    #: the CUDA major (13)
    major: int
    #: requirement specs of the pip distributions ``--cuda-from-wheels`` builds the toolkit from
    build_wheels: tuple[str, ...]
    #: the lock of those wheels (exact versions and file hashes, build_steps.cuda_lock)
    wheel_lock: Path
    #: what those wheels take in the harness cache once installed, in GiB (preflight's figure)
    wheels_space_gib: float
    #: SONAME prefix -> the RUNPATH entry of libmxnet.so that reaches the pip library
    pip_libraries: dict[str, str]
    #: SONAME prefix -> the pip distribution that ships it
    pip_distributions: dict[str, str]
    #: SONAME prefix -> (majors, what they are): the majors a NEEDED left to the host or pip may have
    soname_majors: dict[str, tuple[tuple[str, ...], str]]
    #: what the cuBLAS gate judges this major's cuBLAS and drivers by
    cublas: CublasPolicy

    def soname(self, prefix: str) -> str:
        """The SONAME this stack's ``prefix`` library has (``libcublas`` -> ``libcublas.so.13``)."""
        return f"{prefix}.so.{self.soname_majors[prefix][0][0]}"


#: The libraries of a stack that the cuBLAS gate reads facts of (checked when profiles.toml loads).
CUBLAS_PROBE_LIBRARIES = ("libcublas", "libcudart")


def _site_dir(runpath: str) -> str:
    """A RUNPATH entry of libmxnet.so (in ``mxnet/``) as a site-packages dir: ``nvidia/cu13/lib``."""
    return posixpath.normpath(posixpath.join("mxnet", runpath.replace("${ORIGIN}", "$ORIGIN")
                                             .removeprefix("$ORIGIN/")))


# ``profile`` below: a build_steps.profile_data.Profile, typed Any: profile_data imports this module.
def cublas_requirement(profile: Any) -> str:
    """The profile's Requires-Dist spec of the distribution that ships cuBLAS ("" without one)."""
    dist = canonicalize_name(profile.cuda.pip_distributions["libcublas"])
    return next((spec for spec in profile.hard_requirements if canonicalize_name(Requirement(spec).name) == dist), "")


def cublas_probe_args(profile: Any) -> list[str]:
    """The command-line arguments that tell tests/probes/cublas_probe.py the profile's CUDA stack:
    the probe runs in the wheel's venv and cannot read profiles.toml. Empty for a profile without
    a CUDA stack (the probe then reports that it has no cuBLAS to look for)."""
    stack = profile.cuda
    if stack is None:
        return []
    policy = stack.cublas
    args = ["--cuda-major", str(stack.major),
            "--cublas-soname", stack.soname("libcublas"), "--cudart-soname", stack.soname("libcudart"),
            "--cublas-distribution", stack.pip_distributions["libcublas"],
            "--driver-floor", str(policy.driver_floor), "--pin-driver", str(policy.pin_driver)]
    for site_dir in (_site_dir(stack.pip_libraries["libcublas"]), *policy.legacy_pip_dirs):
        args += ["--pip-dir", site_dir]
    for flag, value in (("--cublas-requirement", cublas_requirement(profile)),
                        ("--new-driver-from", policy.new_driver_from),
                        ("--syrk-crash", policy.syrk_crash), ("--syrk-fixed", policy.syrk_fixed)):
        if value:
            args += [flag, value]
    return args


def _cublas_facts(pre: dict[str, Any]) -> str:
    drv = pre.get("driver") or {}
    return (f"cuBLAS {pre.get('full_version') or pre.get('version') or 'unknown'} from "
            f"{pre.get('loaded_from') or pre.get('lib') or 'nowhere'}, driver {drv.get('kernel_module') or 'unknown'}")


def cublas_not_judged(pre: dict[str, Any]) -> str | None:
    """Why this host cannot judge the wheel's cuBLAS promise, in one line; None when it can.

    ``pre`` is the cuBLAS probe's preflight (tests/probes/cublas_probe.py): the cuBLAS the venv
    loads, the driver, and the profile's stack. Two things make the verdict about the host, not the
    wheel (issue 40): a driver below the one the wheel's pinned cuBLAS needs (R580 under a wheel
    pinning nvidia-cublas>=13.5, which needs R590: the large-GEMM trap is the driver's, and a user of
    the wheel is told to upgrade it), and a venv whose cuBLAS is not the pinned one (a development
    option such as --no-deps with an unpinned --extra-requirement put another there). An unknown
    driver or version is judged by the gates, which say what they could not read."""
    stack = pre.get("stack") or {}
    requirement = stack.get("cublas_requirement") or ""
    pin_driver = stack.get("pin_driver")
    driver = (pre.get("driver") or {}).get("driver_major")
    version = pre.get("full_version")
    if isinstance(driver, int) and isinstance(pin_driver, int) and driver < pin_driver:
        return (f"not judged: driver {driver} is below the wheel's floor (R{pin_driver}, which "
                f"{requirement or 'its pinned cuBLAS'} needs); its cuBLAS promises (syrk, large GEMM) can "
                f"only be judged on an R{pin_driver}+ host [{_cublas_facts(pre)}]")
    if requirement and version:
        from packaging.version import InvalidVersion, Version
        try:
            inside = Requirement(requirement).specifier.contains(Version(str(version)), prereleases=True)
        except InvalidVersion:
            inside = True  # not a version packaging reads: the gates say what they found
        if not inside:
            return (f"not judged: the venv's cuBLAS {version} is not the wheel's {requirement} (a development "
                    "option put it there: --no-deps with an unpinned --extra-requirement, or --find-links "
                    f"without the pinned wheel); install the pinned cuBLAS to judge it [{_cublas_facts(pre)}]")
    return None


def blas_failure_reason(pre: dict[str, Any], result: dict[str, Any]) -> str:
    """A failed syrk/GEMM check in words: never empty (issue 40: "gemm N=1024 failed: " and nothing
    more on the H100 host). The probe's own error text, else its exit status and stderr's last lines,
    else the keys it did return; always the cuBLAS and driver it ran on."""
    what = f"{result.get('kind', '?')} N={result.get('n', '?')} failed: "
    detail = str(result.get("error") or "").strip()
    if not detail:
        tail = [line for line in str(result.get("stderr_tail") or "").splitlines() if line.strip()]
        if tail or result.get("returncode") not in (None, 0):
            detail = (f"the probe exited {result.get('returncode')} without an error text; stderr ends: "
                      + " | ".join(tail[-3:]))
        else:
            detail = f"the probe gave no error text (result keys: {', '.join(sorted(result))})"
    return what + detail + f" [{_cublas_facts(pre)}]"
