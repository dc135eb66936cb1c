"""``mxnet-release publish --report=R``: the privileged step, after a verify run (issue 29).

It runs no code of the tree or the wheel: it reads the report (build_steps.release_report checks its
digest, its harness and that the whole release set passed), pins the wheel again and compares its
sha256 with the report's, hashes the review page, re-reads the repository (a clean tree at the
report's commit, the tag still free) and only then uses the token: ``gh`` (and the push) run here,
never in the verify run. The commands are made here from the report's facts, never taken from it.

The digest proves only that someone holding the key wrote the report (issue 41 item 5: a tree's
code copied the key once). So what can be checked here without the key is checked again, and a
stolen key is worth as little as possible (docs/trust_model.md): the tag is the version's, the
wheel's file name and its METADATA carry that version, the gates said to have passed are the
release manifest's and an excused gate is only a shard gate this tree itself leaves out, the
wheel's commit stamp and the report's commit are the tree's HEAD.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

import zipfile
from email.parser import HeaderParser

from . import publish
from .acceptance.suite import load_suite, not_applicable
from .pinning import pin_wheel, sha256_of, unlock
from .profile_data import get_profile
from .release_manifest import load_manifest
from .release_report import check_key_place, key_path, read_report
from .errors import PublishFailed, ReportRefused


def publish_from_report(report_path: Path, *, dry_run: bool, yes: bool,
                        say: Callable[[str], object] = print) -> str:
    """Publish what ``report_path`` describes; returns the release URL (or the tag / 'dry run')."""
    content = read_report(report_path)
    profile = get_profile(content["flavor"])
    release = content["release"]
    # the tree and the wheel's dir were writable to a run's sandboxes: no key there either
    check_key_place(key_path(), also=[Path(content["repo"]), Path(content["wheel"]).parent])
    if release.get("tag") != publish.tag_for(release["version"]):
        raise ReportRefused(f"publish refused: the report's tag {release.get('tag')} is not "
                            f"{publish.tag_for(release['version'])}, the tag of its version {release['version']}")
    _check_gates(content, Path(content["repo"]))
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
            _check_wheel_version(Path(pin.path), source, release["version"])
            for asset, digest in (content.get("assets") or {}).items():
                now = sha256_of(asset) if Path(asset).is_file() else "nothing (the file is gone)"
                if now != digest:
                    raise ReportRefused(f"publish refused: {asset} hashes to {now}, not to the report's {digest}")
            state = publish.preflight(Path(content["repo"]), content["remote"], dry_run=dry_run, yes=yes)
            if state.head != release["commit"]:
                raise ReportRefused(
                    f"publish refused: HEAD of {state.repo} is {state.head[:12]}, the verified wheel was built "
                    f"from {release['commit'][:12]}; check that commit out (the tag goes on it)")
            facts = publish.ReleaseFacts(**_facts(content["facts"]))
            try:
                publish.check_commit(facts, state.head)
            except PublishFailed as exc:
                raise ReportRefused(f"publish refused: {exc}") from None
            version = publish.resolve_release_version(state, profile, explicit=release["version"])
            plan = publish.plan_release(
                state, version, profile, facts, Path(pin.path),
                gates=content["gates_passed"], digest=pin.sha256, assets=list(content.get("assets") or ()),
                # a split release's report names the runs its gates passed over (tools.release_verify)
                runs=[f"{r['file']} ({r['host']}, {r['created']})" for r in content.get("parts") or ()])
            if dry_run:
                for line in plan.printable():
                    say(line)
                return "dry run"
            return publish.execute(plan)
        finally:
            unlock(pin)


def _check_wheel_version(pinned: Path, source: Path, version: str) -> None:
    """The wheel's file name and its METADATA both carry ``version`` (read as data from the pinned
    copy: nothing of the wheel runs)."""
    named = publish.wheel_version(source)
    if named != version:
        raise ReportRefused(f"publish refused: the wheel {source.name} is version {named}, which is not the "
                            f"report's version {version}")
    try:
        with zipfile.ZipFile(pinned) as zf:
            metas = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            said = HeaderParser().parsestr(zf.read(metas[0]).decode("utf-8", "replace"))["Version"] \
                if len(metas) == 1 else None
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise ReportRefused(f"publish refused: {source.name} cannot be read as a wheel ({exc})") from None
    if said is None or said.strip() != version:
        raise ReportRefused(f"publish refused: {source.name} is named for {version} but its METADATA says "
                            f"Version {said}; these are another wheel's bytes")


def _check_gates(content: dict[str, Any], repo: Path) -> None:
    """The gates said to have passed are the release manifest's, and each excused gate is a shard
    gate that the fork's own script would not run on this tree (its only-if file is absent):
    read_report already checked that every other gate of the set passed."""
    flavor = content["flavor"]
    gates = set(load_manifest(flavor).gates)
    extra = sorted(set(content.get("gates_passed") or ()) - gates)
    if extra:
        raise ReportRefused(f"publish refused: the report lists gates not in the {flavor} release set: "
                            f"{', '.join(extra[:5])}")
    shards = {s.id: s for s in load_suite().shards}
    for gate in sorted(content.get("excused") or ()):
        sid = gate.rsplit("::test_shard[", 1)[-1].rstrip("]") if "::test_shard[" in gate else None
        if gate not in gates or sid not in shards or not not_applicable(shards[sid], repo):
            raise ReportRefused(f"publish refused: the report excuses {gate}, which this tree does not leave "
                                "out (only a shard whose only-if file is absent may be)")


def _facts(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}


def main(argv: list[str]) -> int:
    """``mxnet-release publish --report=R --yes|--dry-run`` (harness.cli hands it the arguments)."""
    import argparse
    import sys

    from .errors import REFUSED, HarnessError, exit_status
    parser = argparse.ArgumentParser(
        prog="mxnet-release publish",
        description="tag and release the wheel a verify run (-m release --publish --release-report=R) "
                    "passed; runs no code of the tree or the wheel")
    parser.add_argument("--report", required=True, type=Path, help="the verify run's --release-report file")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--yes", action="store_true", help="really tag, push and create the GitHub release")
    mode.add_argument("--dry-run", action="store_true", help="print the commands, change nothing")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return REFUSED if exc.code else 0  # argparse: --help is 0, a bad argument is refused
    try:
        url = publish_from_report(args.report, dry_run=args.dry_run, yes=args.yes)
    except HarnessError as exc:
        print(f"mxnet-release publish: {exc}", file=sys.stderr)
        return exit_status(exc)  # its class's exit_code: 4 refused (PublishRefused, ReportRefused), else 1
    print(f"PUBLISHED {url}" if not args.dry_run else "dry run: nothing was changed")
    return 0
