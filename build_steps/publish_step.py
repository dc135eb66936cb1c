"""``mxnet-release publish --report=R``: the privileged step, after a verify run (issue 29).

It runs no code of the tree or the wheel: it reads the report (build_steps.release_report checks its
digest, its harness and that the whole release set passed), pins the wheel again and compares its
sha256 with the report's, hashes the review page, re-reads the repository (a clean tree at the
report's commit, the tag still free) and only then uses the token: ``gh`` (and the push) run here,
never in the verify run. The commands are made here from the report's facts, never taken from it.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from . import publish
from .pinning import pin_wheel, sha256_of, unlock
from .profile_data import get_profile
from .release_report import ReportRefused, read_report


def publish_from_report(report_path: Path, *, dry_run: bool, yes: bool, say=print) -> str:
    """Publish what ``report_path`` describes; returns the release URL (or the tag / 'dry run')."""
    content = read_report(report_path)
    profile = get_profile(content["flavor"])
    release = content["release"]
    with tempfile.TemporaryDirectory(prefix="mxnet-publish-") as tmp:
        source = Path(content["wheel"])
        if not source.is_file():
            raise ReportRefused(f"publish refused: the report's wheel {source} is gone; run the verify run again")
        pin = pin_wheel(source, Path(tmp) / "pinned")
        try:
            if pin.sha256 != content["sha256"]:
                raise ReportRefused(
                    f"publish refused: {source} hashes to {pin.sha256}, not to the sha256 {content['sha256']} "
                    "the verify run's gates judged; nothing was tagged. Run the verify run again")
            for asset, digest in (content.get("assets") or {}).items():
                now = sha256_of(asset) if Path(asset).is_file() else "nothing (the file is gone)"
                if now != digest:
                    raise ReportRefused(f"publish refused: {asset} hashes to {now}, not to the report's {digest}")
            state = publish.preflight(Path(content["repo"]), content["remote"], dry_run=dry_run, yes=yes)
            if state.head != release["commit"]:
                raise ReportRefused(
                    f"publish refused: HEAD of {state.repo} is {state.head[:12]}, the verified wheel was built "
                    f"from {release['commit'][:12]}; check that commit out (the tag goes on it)")
            version = publish.resolve_release_version(state, profile, explicit=release["version"])
            plan = publish.plan_release(
                state, version, profile, publish.ReleaseFacts(**_facts(content["facts"])), Path(pin.path),
                gates=content["gates_passed"], digest=pin.sha256, assets=list(content.get("assets") or ()))
            if dry_run:
                for line in plan.printable():
                    say(line)
                return "dry run"
            return publish.execute(plan)
        finally:
            unlock(pin)


def _facts(raw: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
