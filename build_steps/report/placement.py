"""The end of the build chain: the built wheel to dist/ when every build and provenance gate
passed, else set aside as FAILED-GATES; and the summary's lines about the chain (the tree, each
step's time, the compiler cache, the development switches). Functions of the run record
(build_steps.report.record.RunRecord): gate outcomes are the ledger's entries (on an xdist controller every
worker's), the wheel is the package step's typed product, the bytes the pin's.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from build_steps import launcher, package
from build_steps.errors import HarnessError
from build_steps.overrides import broken_promises, development_option_promises
from build_steps.pinning import verify
from build_steps.readers import ninja_log

from build_steps.build_chain import step_times
from build_steps.gate_ledger import Entry

from .record import ChainProducts, RunRecord

if TYPE_CHECKING:
    from build_steps.options import RunOptions
    from build_steps.pinning import WheelPin


def gate_failures(entries: Mapping[str, Entry]) -> tuple[list[str], int]:
    """The release gates of the build and provenance kinds that failed (a skip during the test
    counts: the gate did not vouch for the wheel), and how many provenance gates passed."""
    gates = {n: e for n, e in entries.items()
             if "release" in e.markers and ("provenance" in e.markers or "build" in e.markers)}
    failed = [n for n, e in gates.items() if e.verdict == "failed"
              or (e.verdict in ("skipped", "xfailed") and e.when == "call")]
    passed_provenance = sum(e.verdict == "passed" and "provenance" in e.markers for e in gates.values())
    return failed, passed_provenance


def place_wheel(pin: WheelPin | None, wheel: Path, dist: Path, failed: list[str], passed_provenance: int
                ) -> tuple[str, str | None]:
    """The summary's line, and where the wheel now lies (None: it stays where the build put it).
    dist/ gets the run's private copy, checked again first (build_steps.pinning)."""
    if failed:
        kept = package.reject_wheel(wheel, dist)
        return (f"wheel NOT copied to dist/: {len(failed)} build/provenance gate(s) failed; "
                f"kept aside as {kept}"), str(kept)
    if not passed_provenance:
        return f"wheel NOT copied to dist/: no provenance gate ran; it stays in {wheel.parent}", None
    source = verify(pin, "dist/") if pin is not None else wheel
    dest = package.publish_to_dist(source, dist, sha256=pin.sha256 if pin else None, src=dist.parent)
    return f"wheel passed {passed_provenance} provenance gate(s): {dest}", str(dest)


@dataclass(frozen=True)
class Placement:
    """What the placement row decided: the summary's lines, where the built wheel now lies (None:
    where the build put it), and whether placing it failed (a full disk, a swapped wheel)."""
    lines: tuple[str, ...]
    placed: str | None = None
    failed: bool = False


def place_built_wheel(rec: RunRecord) -> Placement | None:
    """The chain's summary, and the built wheel to dist/ (every build and provenance gate passed) or
    set aside as FAILED-GATES (one failed); a wheel no gate could judge stays where it is. None: the
    chain did not run (an audit)."""
    if not rec.chain.ran():
        return None
    lines = chain_lines(rec.chain) + override_lines(rec.options)
    built = rec.chain.wheel
    if built is None:
        return Placement(tuple(lines))
    failed, passed_provenance = gate_failures(rec.entries)
    not_judged = rec.not_judged
    if not failed and not_judged:
        # the host failed, not the wheel: no verdict moves it (a re-run after the fix judges it)
        return Placement((*lines, f"wheel NOT judged ({len(not_judged)} gate(s) could not run): neither "
                          f"copied to dist/ nor set aside; it stays in {built.wheel.parent}"))
    if built.dist is None:  # fail closed: never a dist/ guessed from the wheel's path
        return Placement((*lines, "wheel NOT placed in dist/: the package step's record names no dist/"),
                         failed=True)
    try:
        line, placed = place_wheel(rec.pin, built.wheel, built.dist, failed, passed_provenance)
    except HarnessError as exc:  # a full disk, a swapped wheel, a released version: one block
        return Placement((*lines, f"wheel NOT placed in dist/: {exc}"), failed=True)
    return Placement((*lines, line), placed)


def chain_lines(chain: ChainProducts) -> list[str]:
    """Which tree was built, and each step's time (or FAILED, or INTERRUPTED, the install's too)."""
    lines: list[str] = []
    src = chain.source
    if src is not None:
        lines.append(f"build chain: MXNet tree {src.root} (commit {src.commit or 'n/a'})")
        lines += [f"WARNING: {w}" for w in src.submodule_warnings]
    times = step_times(chain.records(), chain.after_records())
    if times:
        lines.append("build chain steps: " + ", ".join(times))
    compiled = chain.compile
    if compiled is None:
        return lines
    stats = launcher.LauncherStats.from_json(compiled.launcher)
    if stats:
        lines.append(stats.summary())
    if compiled.reproducible:
        lines.append(compiled.reproducible)
    lines += ninja_log.describe(compiled.build_time, compiled.seconds)
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
