"""GPU verification fanned out: which release arch a GPU of that arch really ran MXNet on.

One GPU checks one arch, the wheel promises six. Each GPU runner runs the GPU gates on the same
wheel and writes its JSON report (``--provenance-json``); the report carries the wheel's sha256
and, per GPU gate, its verdict and the GPU gpu(0) was (name, compute capability). This module
merges a directory of such reports:

    python -m build_steps.gpu_verify DIR [--wheel=W] [--cuda-arch LIST]

prints one row per release SASS arch (verified by which report and GPU, failed, or no GPU) and
exits 1 naming the archs no GPU verified (or on which a GPU failed). Reports of another wheel
(another sha256) are never counted: with ``--wheel`` only that wheel's reports are, without it
the reports must all be of one wheel.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .pinning import sha256_of
from .profiles import RELEASE_CUDA_ARCH, parse_cuda_arch

SECTION = "gpu_verification"


def sm_name(compute_capability: str | None) -> str | None:
    """``"9.0"`` -> ``"sm_90"``, ``"12.0"`` -> ``"sm_120"``."""
    if not compute_capability or "." not in compute_capability:
        return None
    major, minor = compute_capability.split(".", 1)
    return f"sm_{int(major) * 10 + int(minor)}"


def gpu_identity(preflight: dict | None) -> dict | None:
    """The GPU the gates' ``gpu(0)`` is, from the cuBLAS/driver preflight's device list."""
    gpus = ((preflight or {}).get("driver") or {}).get("gpus") or []
    if not gpus:
        return None
    g = gpus[0]
    return {"name": g.get("name"), "compute_capability": g.get("compute_capability"),
            "arch": sm_name(g.get("compute_capability")), "visible": len(gpus)}


# ---- merge -------------------------------------------------------------------------------------

@dataclass
class RunVerdict:
    """One report's GPU gates on one GPU."""
    report: str
    host: str
    gpu: dict
    outcome: str               # "passed" (>= 1 gpu gate passed, none failed), "failed", "skipped"
    detail: str = ""


@dataclass
class Merged:
    wheel_sha256: str
    archs: list                          # release SASS archs, "sm_80", ...
    runs: list                           # RunVerdict of the counted reports
    per_arch: dict = field(default_factory=dict)   # arch -> [RunVerdict]
    ignored: list = field(default_factory=list)    # (report, why)
    extra_archs: dict = field(default_factory=dict)

    @property
    def unverified(self) -> list:
        return [a for a in self.archs if not any(r.outcome == "passed" for r in self.per_arch.get(a, []))]

    @property
    def failed(self) -> list:
        return [a for a in self.archs if any(r.outcome == "failed" for r in self.per_arch.get(a, []))]

    @property
    def ok(self) -> bool:
        return not self.unverified and not self.failed


def load_reports(directory: Path) -> list[tuple[Path, dict]]:
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"--merge-reports {directory}: no such directory; pass the directory the GPU "
                         "runners' --provenance-json reports were collected in")
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            out.append((path, json.loads(path.read_text())))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: not a JSON report ({exc}); remove it or write it again with "
                             "--provenance-json") from None
    if not out:
        raise UsageError(f"{directory}: no *.json reports in it; each GPU runner writes one with "
                         "pytest -m \"provenance or gpu or cublas\" --wheel=W --provenance-json=DIR/NAME.json")
    return out


def _run_verdict(path: Path, doc: dict) -> RunVerdict | None:
    section = doc.get(SECTION) or {}
    gates = section.get("gates") or {}
    if not gates:
        return None
    outcomes = [g.get("verdict") for g in gates.values()]
    gpu = next((g["gpu"] for g in gates.values() if g.get("gpu")), None) or {}
    if "failed" in outcomes:
        outcome = "failed"
        detail = next(f"{n}: {g.get('message', '')}" for n, g in gates.items() if g.get("verdict") == "failed")
    elif "passed" in outcomes:
        outcome, detail = "passed", f"{outcomes.count('passed')} GPU gates passed"
    else:
        outcome = "skipped"
        detail = next((g.get("message", "") for g in gates.values()), "")
    return RunVerdict(report=path.name, host=section.get("host", "?"), gpu=gpu, outcome=outcome,
                      detail=detail[:200])


def merge(reports: list[tuple[Path, dict]], wheel_sha256: str | None = None,
          cuda_arch: str | None = None) -> Merged:
    ignored, by_sha = [], {}
    for path, doc in reports:
        sha = ((doc.get("wheel") or {}).get("sha256"))
        if not sha:
            ignored.append((path.name, "no wheel sha256 in the report (written by an older harness?): "
                            "it cannot be tied to a wheel"))
            continue
        by_sha.setdefault(sha, []).append((path, doc))
    if wheel_sha256 is None:
        if len(by_sha) > 1:
            listing = "; ".join(f"{sha[:12]}: {', '.join(p.name for p, _ in docs)}" for sha, docs in by_sha.items())
            raise UsageError(f"the reports are of {len(by_sha)} different wheels ({listing}): pass "
                             "--wheel=W to count only that wheel's, or keep one wheel's reports per directory")
        if not by_sha:
            raise UsageError("no report names its wheel's sha256: nothing can be merged")
        wheel_sha256 = next(iter(by_sha))
    for sha, docs in by_sha.items():
        if sha != wheel_sha256:
            ignored += [(p.name, f"another wheel (sha256 {sha[:12]}…)") for p, _ in docs]
    mine = by_sha.get(wheel_sha256, [])

    if cuda_arch is None:
        wanted = {(d.get("expected") or {}).get("cuda_arch") for _, d in mine} - {None, ""}
        if len(wanted) > 1:
            raise UsageError(f"the reports expect different arch lists ({', '.join(sorted(wanted))}): "
                             "pass --cuda-arch to say which the wheel promises")
        cuda_arch = wanted.pop() if wanted else RELEASE_CUDA_ARCH
    spec = parse_cuda_arch(cuda_arch)
    archs = [f"sm_{a}" for a in spec.sass]
    merged = Merged(wheel_sha256=wheel_sha256, archs=archs, runs=[], ignored=ignored)
    for path, doc in mine:
        run = _run_verdict(path, doc)
        if run is None:
            merged.ignored.append((path.name, "no GPU gate ran in this run (static report only)"))
            continue
        merged.runs.append(run)
        arch = run.gpu.get("arch")
        if arch is None:
            merged.ignored.append((path.name, "no GPU on that runner (every GPU gate skipped)"
                                   if run.outcome == "skipped" else
                                   f"GPU gates {run.outcome} but the report names no GPU: {run.detail}"))
            continue
        if arch in archs:
            merged.per_arch.setdefault(arch, []).append(run)
        else:
            merged.extra_archs.setdefault(arch, []).append(run)
    return merged


def summary_lines(m: Merged) -> list[str]:
    lines = [f"GPU verification of wheel sha256 {m.wheel_sha256} ({len(m.runs)} GPU runs merged)"]
    for arch in m.archs:
        runs = m.per_arch.get(arch, [])
        if not runs:
            lines.append(f"  {arch:<7} NOT VERIFIED: no GPU of this arch ran the GPU gates")
            continue
        state = "FAILED" if any(r.outcome == "failed" for r in runs) else (
            "verified" if any(r.outcome == "passed" for r in runs) else "NOT VERIFIED")
        who = "; ".join(f"{r.gpu.get('name')} on {r.host} ({r.report}): {r.outcome}"
                        + (f" - {r.detail}" if r.outcome != "passed" else "") for r in runs)
        lines.append(f"  {arch:<7} {state}: {who}")
    for arch, runs in sorted(m.extra_archs.items()):
        lines.append(f"  {arch:<7} not a release arch of this wheel: "
                     + "; ".join(f"{r.gpu.get('name')} ({r.report}): {r.outcome}" for r in runs))
    for name, why in m.ignored:
        lines.append(f"  ignored {name}: {why}")
    if m.ok:
        lines.append(f"strict verdict: PASS - every release arch ({', '.join(m.archs)}) ran MXNet from this wheel on a GPU")
    else:
        parts = []
        if m.failed:
            parts.append(f"GPU gates failed on {', '.join(m.failed)}")
        missing = [a for a in m.unverified if a not in m.failed]
        if missing:
            parts.append(f"no GPU verified {', '.join(missing)}")
        lines.append("strict verdict: FAIL - " + "; ".join(parts))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m build_steps.gpu_verify",
                                 description="Merge GPU runners' JSON reports: which release arch a GPU verified.")
    ap.add_argument("directory", type=Path, help="directory of --provenance-json reports")
    ap.add_argument("--wheel", type=Path, help="count only reports of this wheel (its sha256)")
    ap.add_argument("--cuda-arch", help="the arch list the wheel promises (default: the reports')")
    args = ap.parse_args(argv)
    try:
        sha = None
        if args.wheel is not None:
            if not args.wheel.is_file():
                raise UsageError(f"--wheel {args.wheel}: no such file")
            sha = sha256_of(args.wheel)
        merged = merge(load_reports(args.directory), sha, args.cuda_arch)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(merged)))
    return 0 if merged.ok else 1


if __name__ == "__main__":
    sys.exit(main())
