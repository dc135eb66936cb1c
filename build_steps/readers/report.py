"""The provenance report: terminal summary lines and the machine-readable ``--provenance-json``."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import write_json
from ..errors import UsageError
from ..arch import parse_cuda_arch
from . import loadability, macho_audit

if TYPE_CHECKING:
    from ..arch import Arch
    from .audit import Audit

#: gate node id -> (verdict, message), as harness.plugins.wheel_facts files them
Verdicts = dict[str, tuple[str, str]]


def summary_lines(audit: Audit | None, verdicts: Verdicts) -> list[str]:
    """Human lines for the end of the run: what the wheel is, and what it was judged to be."""
    if audit is None:
        return ["provenance: no wheel was audited in this run"]
    lines = [f"wheel: {audit.filename} (profile {audit.profile})"]
    macho = getattr(audit, "macho", None)
    if macho is not None:
        lines += macho_audit.summary_lines(macho)
    else:
        lines += _elf_lines(audit)
    install = getattr(audit, "install", None)
    if install is not None:  # where pip puts it (build_steps.readers.install_map)
        schemes = install.install.get("schemes", {})
        lines.append(f"installs as: {install.install.get('root_scheme')} root (Root-Is-Purelib: "
                     f"{install.install.get('root_is_purelib_text')}); top-level {', '.join(install.top_level) or '(none)'}; "
                     + "; ".join(f"{s} {len(v)}" for s, v in sorted(schemes.items())))
    hard = ", ".join(f"{n}{s}" for n, s in sorted(audit.requirements.hard.items()))
    lines.append(f"hard dependencies: {hard or '(none)'}")
    if audit.cmake:
        feats = " ".join(f"{k}={'ON' if v['enabled'] else 'OFF' if v['enabled'] is False else '?'}"
                         for k, v in audit.cmake["features"].items())
        lines.append(f"CMake cache {audit.cmake['path']}: {feats}; MXNET_CUDA_ARCH={audit.cmake['cuda_arch']}")
    if audit.git:
        g = audit.git
        lines.append(f"source: {g['root']} HEAD {g['commit'] or g['error']}"
                     f"{' (dirty)' if g.get('tracked_changes') else ''}")
    if audit.stamps:
        src = audit.stamps.get("source") or ("binary" if audit.stamps.get("binary") else
                                             "build files (fallback)" if audit.stamps.get("build_files") else "none")
        lines.append(f"commit stamp read from: {src}; binary candidates: {', '.join(audit.stamps.get('binary') or []) or '(none)'}")
    for w in audit.warnings:
        lines.append(f"WARNING: {w}")
    counts: dict[str, int] = {}
    for verdict, _ in verdicts.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    lines.append("provenance verdict: " + (", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no gates ran"))
    return lines


def _elf_lines(audit: Audit) -> list[str]:
    lines = []
    lib = audit.libmxnet
    if audit.libmxnet_error:
        lines.append(f"libmxnet.so: {audit.libmxnet_error}")
    elif lib is not None:
        lines.append(f"libmxnet.so NEEDED: {', '.join(lib.needed) or '(none)'}")
        lines.append(f"libmxnet.so {lib.search_tag or 'RUNPATH'}: {':'.join(lib.search_path) or '(none)'}")
    if audit.fatbin:
        lines.append(f"CUDA SASS: {' '.join(audit.fatbin['sass']) or '(none)'}; PTX: "
                     f"{' '.join(audit.fatbin['ptx']) or '(none)'} (ISA {', '.join(audit.fatbin['ptx_versions']) or '-'}); "
                     f"{audit.fatbin['containers']} fatbin containers")
    elif audit.fatbin_error:
        lines.append(f"CUDA fatbin: {audit.fatbin_error}")
    else:
        lines.append("CUDA fatbin: none (no .nv_fatbin section)")
    fatbins = getattr(audit, "fatbins", None) or {}
    if fatbins or getattr(audit, "fatbin_errors", None):
        from .audit import arch_table
        lines.append(f"GPU code by library ({len(fatbins)} with a .nv_fatbin):")
        lines += [f"  {row}" for row in arch_table(audit)]
    names = sorted({m.rsplit('/', 1)[-1] for m in audit.bundled_elf})
    shown = ", ".join(names[:12]) + (f", ... (+{len(names) - 12})" if len(names) > 12 else "")
    lines.append(f"bundled libraries: {len(audit.bundled_elf)} files in mxnet/lib: {shown or '(none)'}")
    unresolved = audit.closure.unresolved()
    lines.append(f"bundled closure: {len(audit.closure.resolutions)} NEEDED entries resolved, "
                 f"{len(unresolved)} unresolved")
    lines += loadability.summary_lines(getattr(audit, "loadability", None))
    return lines


#: The report's format: 2 stores ``expected.cuda_arch`` as Arch.to_json (1 stored the requested text).
SCHEMA = 2


def built_arch(audit: Audit | None, options: Any) -> tuple[Arch, str]:
    """(the run's Arch as the report records it, where its built list was read).

    The built list is the one the build was configured with. configure.verify_cache refuses a
    run whose CMake cache's MXNET_CUDA_ARCH is not Arch.built, so the cache this audit read
    (``audit.cmake``: --mxnet-src or --cmake-cache) says the same for a run that built; an audited
    build whose cache says otherwise is recorded as built with the cache's list (as the override of
    the request, which stays beside it). Without a cache (a --wheel audit) no configure is known and
    the run's own Arch stands: what the wheel carries is ``facts.fatbin``, which the readers hold
    against this list (the review page's SASS column, ``tools.gpu_verify --wheel``). Taking the
    fatbin as the list would leave an arch the wheel lacks nothing to be missing from.
    """
    arch: Arch = options.cuda_arch
    cmake = (audit.cmake if audit is not None else None) or {}
    cached = cmake.get("cuda_arch")
    if not options.profile.is_cuda or not cached:
        return arch, "the run's --cuda-arch/--cmake-define (no CMake cache was read)"
    where = f"the CMake cache {cmake.get('path')}"
    try:
        configured = parse_cuda_arch(cached)
    except UsageError:  # not a list CMake would build: the gates say so; the request stands here
        return arch, f"the run's --cuda-arch/--cmake-define ({where} has MXNET_CUDA_ARCH={cached!r}, not an arch list)"
    if configured != arch.built:
        arch = replace(arch, override=configured)
    return arch, where


def provenance_document(audit: Audit | None, verdicts: Verdicts, options: Any) -> dict[str, Any]:
    # options: build_steps.options.RunOptions, not imported (build_steps.options imports the readers)
    gates = {nodeid: {"verdict": v, "message": why} for nodeid, (v, why) in sorted(verdicts.items())}
    arch, arch_from = built_arch(audit, options)
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile": options.profile.name,
        # cuda_arch: Arch.to_json; readers take it back with Arch.from_json (gpu_reports.report_arch)
        "expected": {"package_version": options.package_version, "cuda_arch": arch.to_json(),
                     "cuda_arch_built_from": arch_from, "features": dict(options.profile.features)},
        "passed": bool(gates) and all(g["verdict"] == "passed" for g in gates.values()),
        "gates": gates,
        "facts": audit.to_json() if audit is not None else None,
    }


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON next to ``path`` and rename it into place: readers never see half a file, a
    full filesystem leaves nothing, and the file gets the user's umask (build_steps.atomic)."""
    write_json(path, data)
