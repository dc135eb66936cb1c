"""The end of the build chain: the built wheel to dist/ when every build and provenance gate
passed, else set aside as FAILED-GATES; and the summary's lines about the chain (the tree, each
step's time, the compiler cache, the development switches). Gate outcomes are read from the
verdict ledger (HarnessRun.ledger), which on an xdist controller holds every worker's.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from build_steps import launcher, package
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.pinning import verify
from build_steps.readers import ninja_log

from .state import HarnessRun
from build_steps.build_chain import step_times

if TYPE_CHECKING:
    from build_steps.options import RunOptions


def gate_failures(run: HarnessRun) -> tuple[list[str], int]:
    """The release gates of the build and provenance kinds that failed (a skip during the test
    counts: the gate did not vouch for the wheel), and how many provenance gates passed."""
    gates = {n: e for n, e in run.ledger.entries.items()
             if "release" in e.markers and ("provenance" in e.markers or "build" in e.markers)}
    failed = [n for n, e in gates.items() if e.verdict == "failed"
              or (e.verdict in ("skipped", "xfailed") and e.when == "call")]
    passed_provenance = sum(e.verdict == "passed" and "provenance" in e.markers for e in gates.values())
    return failed, passed_provenance


def place_wheel(run: HarnessRun, wheel: Path, dist: Path, failed: list[str], passed_provenance: int) -> tuple[str, str | None]:
    """The summary's line, and where the wheel now lies (None: it stays where the build put it).
    dist/ gets the run's private copy, checked again first (build_steps.pinning)."""
    if failed:
        kept = package.reject_wheel(wheel, dist)
        return (f"wheel NOT copied to dist/: {len(failed)} build/provenance gate(s) failed; "
                f"kept aside as {kept}"), str(kept)
    if not passed_provenance:
        return f"wheel NOT copied to dist/: no provenance gate ran; it stays in {wheel.parent}", None
    pin = run.pin
    source = verify(pin, "dist/") if pin is not None else wheel
    dest = package.publish_to_dist(source, dist, sha256=pin.sha256 if pin else None, src=dist.parent)
    return f"wheel passed {passed_provenance} provenance gate(s): {dest}", str(dest)


def chain_lines(records: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Which tree was built, and each step's time (or FAILED, or INTERRUPTED, the install's too)."""
    lines: list[str] = []
    src = records.get("source", {}).get("result", {})
    if src:
        lines.append(f"build chain: MXNet tree {src.get('root')} (commit {src.get('commit') or 'n/a'})")
        lines += [f"WARNING: {w}" for w in src.get("submodule_warnings", [])]
    times = step_times(records, after)
    if times:
        lines.append("build chain steps: " + ", ".join(times))
    compiled = (records.get("compile") or {}).get("result") or {}
    stats = launcher.LauncherStats.from_json(compiled.get("launcher"))
    if stats:
        lines.append(stats.summary())
    if compiled.get("reproducible"):
        lines.append(compiled["reproducible"])
    lines += ninja_log.describe(compiled.get("build_time"), compiled.get("seconds"))
    return lines


def override_lines(options: RunOptions) -> list[str]:
    """The development switches of this run, each with the promise it breaks (if any)."""
    if not options.cmake_defines and not options.allow_dirty and not options.development_options:
        return []
    broken = development_option_promises(options) + broken_promises(options)
    lines: list[str] = []
    if options.development_options:
        lines.append("development options: " + " ".join(options.development_options))
    lines += [f"host workaround (allowed): {w}" for w in options.host_workarounds]
    lines.append("cmake overrides: " + (" ".join(f"-D{k}={v}" for k, v in options.build_defines.items()) or "none"))
    lines += [f"  breaks: {b}" for b in broken]
    if options.allow_dirty:
        lines.append("  --allow-dirty: a dirty tree may be built")
    if broken or options.allow_dirty:
        lines.append("  this run is a development build: it cannot publish")
    return lines
