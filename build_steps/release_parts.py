"""One flavor's whole release set judged over several runs on identical bytes (issue 45).

The CPU flavor's release set (every gate and every cpu, dnnl, quant and onnx shard of the fork's
acceptance suite) does not fit one 30-minute hold of a build host, so it is split: one release run
builds the wheel and runs the gates and some shards (``-m release --flavor=cpu ...
--provenance-json=R1``), later runs audit the SAME wheel file for the remaining shards
(``-m "provenance or acceptance" --wheel=W --mxnet-src=TREE --shards=A,B --provenance-json=R2``,
or ``-m release --wheel=W ...``), on other hosts. This module merges their ``--provenance-json``
reports, as build_steps.gpu_reports merges the GPU runners', and judges the flavor's committed
release set (build_steps.release_manifest) over them. The command line is tools/release_verify.py:
``python -m tools.release_verify DIR --flavor=cpu [--wheel=W]``.

Which reports count (the others are named, never silently dropped):
  - only reports of one wheel: with ``--wheel`` those whose ``wheel.sha256`` is W's (the others are
    listed as another wheel's); without it every report must name one sha256, else a usage error
    naming each sha256 and its files. Identical bytes, not an identical name or version.
  - only harness reports (REPORT_SCHEMA, at most gpu_reports.MAX_REPORT_BYTES): anything else is a
    usage error naming the file. A report with an ``acceptance`` table but no ``wheel`` and no gate
    table is what a run without any provenance gate writes (``-m acceptance --wheel=W``): it cannot
    be tied to a wheel, so it is refused with the fix (select the provenance gates too).
  - only reports made against this checkout's release set: a report's run recorded its release set
    as its gate table plus its ``not_run`` list; a gate of this checkout's manifest missing from it,
    or a gate it knew that the manifest lacks (beyond the shards a ``--shards-file`` run added),
    means another harness version made it: refused, naming the file and the gates. The reports carry
    no harness version (build_steps.release_report.harness_version, which the signed release report
    has), so a gate module changed under the same ids is not seen here.
  - reports of another flavor than the one judged are refused.

How each gate of the set is judged, over the counted reports (strict; the order is the precedence):
  - FAIL when it failed in any report: a later PASS on the same bytes does not erase a failure (a
    flaky gate is a failing gate; the fork's own script excuses no failed shard). A shard killed at
    its own timeout failed (its gate says so, as the fork's script counts a non-zero exit).
  - PASS when a report passed it. A shard split into parts (``--shard-split=SHARD:K/N``, the row's
    ``part``) passes when its passed parts cover every K of one N; otherwise it is NOT RUN naming
    the missing parts.
  - EXCUSED when a report says the fork's own script would not run that shard on its tree
    (``gpu_verification.excused``): it counts as done, as it does for publish.
  - NOT JUDGED when a report could not judge it (the host failed, ``not judged``) and none passed it.
  - NOT RUN otherwise: never selected, skipped (a skip is not a pass), or a shard an interrupt cut
    short or kept from starting (INCOMPLETE, its gate not failed).

The verdict: FAIL (exit 1) when a gate failed; else NOT JUDGED (exit 3) when a gate was not judged;
else FAIL when a gate did not run; else PASS (exit 0). A development run (``review.overrides``:
a development option or a broken promise) is counted, as the harness's own verdict counts it,
and named in one line: such a verdict cannot publish.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import package, publish
from .atomic import write_atomic
from .errors import FAIL, NOT_JUDGED, NOT_JUDGED_EXIT, PublishFailed, PublishRefused, UsageError
from .gpu_reports import read_json_report, validate_report
from .pinning import sha256_of
from .profile_data import get_profile
from .release_manifest import load_manifest
from .release_report import check_key_place, key_path, release_content, write_report

#: What this module reads of a --provenance-json report (build_steps.report.document and harness.plugins.finish
#: write it); other keys are allowed.
_ROW = {"type": "object", "required": ["id", "result"], "properties": {
    "id": {"type": "string"}, "lane": {"type": "string"}, "result": {"type": "string"},
    "summary": {"type": "string"}, "reason": {"type": "string"}, "seconds": {"type": ["number", "null"]},
    "part": {"type": "string", "pattern": "^([0-9]+/[0-9]+)?$"}}}
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "profile", "created", "wheel", "review"],
    "properties": {
        "schema": {"enum": [1, 2]},
        "profile": {"type": "string"},
        "created": {"type": "string"},
        "wheel": {"type": "object", "required": ["sha256"], "properties": {
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "filename": {"type": "string"}}},
        "review": {"type": "object", "required": ["gates", "not_run", "verdict"], "properties": {
            "gates": {"type": "array", "items": {"type": "object", "required": ["nodeid", "verdict"], "properties": {
                "nodeid": {"type": "string"}, "verdict": {"type": "string"}, "why": {"type": ["string", "null"]}}}},
            "not_run": {"type": "array", "items": {"type": "object", "required": ["nodeid"],
                                                   "properties": {"nodeid": {"type": "string"}}}},
            "verdict": {"type": "object", "properties": {"flavor": {"type": "string"},
                                                         "outcome": {"type": "string"}}},
            "overrides": {"type": "object", "properties": {
                "broken": {"type": "array", "items": {"type": "string"}},
                "development_options": {"type": "array", "items": {"type": "string"}}}},
            "provenance": {"type": "object", "properties": {"host": {"type": "string"}}}}},
        "gpu_verification": {"type": ["object", "null"], "properties": {
            "host": {"type": "string"},
            "excused": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "acceptance": {"type": "object", "properties": {"shards": {"type": "array", "items": _ROW}}},
    },
}

#: a shard gate's node id: tests/test_acceptance.py::test_shard[<shard id>]
_SHARD_GATE = re.compile(r"::test_shard\[(?P<id>[^\]]+)\]$")
#: the counts of a pytest summary line ("3 passed, 1 skipped, 2 deselected in 2.47s", "partial: 1 passed")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")

PASS, FAILED, EXCUSED, NOT_RUN = "PASS", "FAIL", "EXCUSED", "NOT RUN"
NOT_JUDGED_STATE = NOT_JUDGED.upper()


def shard_of(nodeid: str) -> str | None:
    """The shard id of a shard gate's node id, None for any other gate."""
    m = _SHARD_GATE.search(nodeid)
    return m.group("id") if m else None


@dataclass(frozen=True)
class Part:
    """One run's report: what it says of the wheel and of each release gate it knew."""
    name: str
    sha256: str
    wheel: str
    flavor: str
    host: str
    created: str
    outcome: str
    #: gate id -> (verdict, why) of every release gate the run ran
    verdicts: Mapping[str, tuple[str, str]]
    #: the release set the run's harness knew: its gate table plus its not_run list
    release_set: frozenset[str]
    #: shard id -> its acceptance row (result, summary, seconds, part)
    rows: Mapping[str, Mapping[str, Any]]
    #: gate id -> why the fork's own script would not run that shard on the run's tree
    excused: Mapping[str, str]
    #: what made the run a development build (review.overrides), empty for a release run
    development: tuple[str, ...]
    #: the run named --shards-file: its shard gates may be another data file's
    own_shards_file: bool
    #: the report file itself (its bytes are what a release report records and attaches)
    path: Path | None = None
    #: the run's provenance facts (build_steps.readers.audit.Audit.to_json), None when it audited nothing
    facts: Mapping[str, Any] | None = None


def read_part(path: Path) -> Part:
    """One ``--provenance-json`` report; anything else is a UsageError naming the file and the fix."""
    path = Path(path)
    doc = read_json_report(path)
    if isinstance(doc, dict) and "acceptance" in doc and "wheel" not in doc and "review" not in doc:
        # harness.plugins.finish writes only the shard table when no provenance gate ran (run.doc is None)
        raise UsageError(f"{path}: an acceptance table without the wheel's sha256 or a gate table (what a "
                         "run without any provenance gate writes): it cannot be tied to the wheel; run that "
                         "part again with the provenance gates selected too: -m \"provenance or acceptance\" "
                         "--wheel=W ... --provenance-json=...")
    validate_report(path, doc, REPORT_SCHEMA)
    review = doc["review"]
    gates = {g["nodeid"]: (g["verdict"], g.get("why") or "") for g in review["gates"]}
    known = frozenset([*gates, *(g["nodeid"] for g in review["not_run"])])
    overrides = review.get("overrides") or {}
    development = tuple(overrides.get("broken") or ()) or tuple(overrides.get("development_options") or ())
    rows = {r["id"]: r for r in (doc.get("acceptance") or {}).get("shards") or ()}
    section = doc.get("gpu_verification") or {}
    host = section.get("host") or (review.get("provenance") or {}).get("host") or "?"
    return Part(name=path.name, sha256=doc["wheel"]["sha256"], wheel=doc["wheel"].get("filename") or "?",
                flavor=(review["verdict"].get("flavor") or doc["profile"]), host=host, created=doc["created"],
                outcome=review["verdict"].get("outcome") or "?", verdicts=gates, release_set=known,
                rows=rows, excused=dict(section.get("excused") or {}), development=development,
                own_shards_file=any(o.startswith("--shards-file") for o in overrides.get("development_options") or ()),
                path=path, facts=doc["facts"] if isinstance(doc.get("facts"), dict) else None)


def load_parts(directory: Path) -> list[Part]:
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory; pass the directory the runs' --provenance-json "
                         "reports were collected in")
    parts = [read_part(p) for p in sorted(directory.glob("*.json"))]
    if not parts:
        raise UsageError(f"{directory}: no *.json reports in it; each run writes one with --provenance-json=DIR/NAME.json")
    return parts


def check_release_set(part: Part, gates: Sequence[str], flavor: str) -> None:
    """Refuse a report whose run knew another release set than ``gates`` (another harness version)."""
    if part.flavor != flavor:
        raise UsageError(f"{part.name}: a report of the {part.flavor} flavor, not {flavor}: one wheel is "
                         "built for one flavor; keep only its reports in the directory")
    missing = [g for g in gates if g not in part.release_set]
    extra = sorted(g for g in part.release_set - set(gates)
                   if not (part.own_shards_file and shard_of(g) is not None))
    if missing or extra:
        said = "; ".join(f"{what}: {', '.join(ids[:3])}{f' and {len(ids) - 3} more' if len(ids) > 3 else ''}"
                         for what, ids in (("not in its release set", missing),
                                           ("not in this checkout's", extra)) if ids)
        raise UsageError(f"{part.name}: made by a harness with another {flavor} release set ({said}): "
                         "run that part again with this checkout")


@dataclass(frozen=True)
class Evidence:
    part: Part
    verdict: str
    why: str
    row: Mapping[str, Any] | None


@dataclass
class Item:
    nodeid: str
    state: str
    evidence: list[Evidence]
    detail: str = ""

    @property
    def shard(self) -> str | None:
        return shard_of(self.nodeid)


@dataclass
class Judgement:
    flavor: str
    wheel_sha256: str
    wheel: str
    parts: list[Part]
    items: list[Item]
    ignored: list[tuple[str, str]] = field(default_factory=list)

    def named(self, state: str) -> list[Item]:
        return [i for i in self.items if i.state == state]

    @property
    def done(self) -> int:
        return sum(1 for i in self.items if i.state in (PASS, EXCUSED))

    @property
    def state(self) -> str:
        if self.named(FAILED):
            return FAILED
        if self.named(NOT_JUDGED_STATE):
            return NOT_JUDGED_STATE
        return FAILED if self.named(NOT_RUN) else PASS

    @property
    def exit_code(self) -> int:
        return {PASS: 0, FAILED: FAIL, NOT_JUDGED_STATE: NOT_JUDGED_EXIT}[self.state]


def _parts_cover(evidence: Sequence[Evidence]) -> tuple[bool, str]:
    """Whether the passed parts of a split shard cover it (every K of one N), and what is missing."""
    by_n: dict[int, set[int]] = {}
    for e in evidence:
        k_text, _, n_text = str((e.row or {}).get("part") or "").partition("/")
        if e.verdict == "passed" and k_text and n_text:
            by_n.setdefault(int(n_text), set()).add(int(k_text))
    if any(len(ks) == n for n, ks in by_n.items()):
        return True, ""
    if not by_n:
        return False, "no part passed"
    n, ks = max(by_n.items(), key=lambda item: len(item[1]) / item[0])
    return False, "part " + ", ".join(f"{k}/{n}" for k in range(1, n + 1) if k not in ks) + " missing"


def _judge_item(nodeid: str, parts: Sequence[Part]) -> Item:
    sid = shard_of(nodeid)
    evidence = [Evidence(p, p.verdicts[nodeid][0], p.verdicts[nodeid][1], p.rows.get(sid) if sid else None)
                for p in parts if nodeid in p.verdicts and p.verdicts[nodeid][0] != "not run"]
    failed = [e for e in evidence if e.verdict == "failed"]
    if failed:
        return Item(nodeid, FAILED, evidence, failed[0].why)
    # an interrupted shard's row (INCOMPLETE) with a gate that did not fail is not run there
    ran = [e for e in evidence if not (e.row is not None and e.row.get("result") == "INCOMPLETE")]
    parted = [e for e in ran if (e.row or {}).get("part")]
    whole = [e for e in ran if e.verdict == "passed" and not (e.row or {}).get("part")]
    covered, gaps = _parts_cover(parted) if parted else (False, "")
    if whole or covered:
        return Item(nodeid, PASS, evidence)
    excused = next((p.excused[nodeid] for p in parts if nodeid in p.excused), None)
    if excused is not None:
        return Item(nodeid, EXCUSED, evidence, excused)
    unjudged = [e for e in ran if e.verdict == NOT_JUDGED]
    if unjudged:
        return Item(nodeid, NOT_JUDGED_STATE, evidence, unjudged[0].why)
    if parted:
        return Item(nodeid, NOT_RUN, evidence, gaps)
    skipped = [e for e in evidence if e.verdict == "skipped"]
    if skipped:
        return Item(nodeid, NOT_RUN, evidence, f"skipped in {skipped[0].part.name}: {skipped[0].why}")
    cut = [e for e in evidence if e.row is not None and e.row.get("result") == "INCOMPLETE"]
    if cut:
        return Item(nodeid, NOT_RUN, evidence,
                    f"INCOMPLETE in {cut[0].part.name}: {cut[0].row.get('reason') if cut[0].row else ''}")
    return Item(nodeid, NOT_RUN, evidence, "in no report" if not evidence else
                f"{evidence[0].verdict} in {evidence[0].part.name}")


def judge(parts: Sequence[Part], flavor: str, wheel_sha256: str | None = None,
          gates: Sequence[str] | None = None, wheel: str | None = None,
          manifest: Sequence[str] | None = None) -> Judgement:
    """The release set of ``flavor`` judged over the reports of one wheel: ``wheel_sha256``'s, or
    the one sha256 all of them name. ``manifest``: the release set this checkout has (default: the
    committed manifest's gates), which each report's run must have known (check_release_set);
    ``gates``: the gates judged (default: ``manifest``; the selftests judge the subset the sample
    tree's runs can cover)."""
    known = tuple(manifest) if manifest is not None else load_manifest(flavor).gates
    required = tuple(gates) if gates is not None else known
    by_sha: dict[str, list[Part]] = {}
    for p in parts:
        by_sha.setdefault(p.sha256, []).append(p)
    if wheel_sha256 is None:
        if len(by_sha) > 1:
            listing = "; ".join(f"{sha[:12]}: {', '.join(p.name for p in ps)}" for sha, ps in by_sha.items())
            raise UsageError(f"the reports are of {len(by_sha)} different wheels ({listing}): the release set is "
                             "judged on identical bytes only; pass --wheel=W or keep one wheel's reports per directory")
        wheel_sha256 = next(iter(by_sha))
    mine = by_sha.get(wheel_sha256, [])
    if not mine:
        raise UsageError(f"none of the {len(parts)} reports is of the wheel with sha256 {wheel_sha256} "
                         f"(they name {', '.join(sorted(s[:12] for s in by_sha))}): nothing to judge")
    ignored = [(p.name, f"another wheel (sha256 {p.sha256[:12]}…)") for sha, ps in by_sha.items()
               if sha != wheel_sha256 for p in ps]
    for p in mine:
        check_release_set(p, known, flavor)
    items = [_judge_item(g, mine) for g in required]
    return Judgement(flavor=flavor, wheel_sha256=wheel_sha256, wheel=wheel or mine[0].wheel, parts=list(mine),
                     items=items, ignored=ignored)


def counts(row: Mapping[str, Any] | None) -> str:
    """"passed/failed/skipped" of a shard row's pytest summary ("3/0/1"), "" when it has none."""
    if not row:
        return ""
    found: dict[str, int] = {}
    for number, word in _COUNT.findall(str(row.get("summary") or "")):
        key = "failed" if word.startswith("error") else word  # an error is a test that did not pass
        found[key] = found.get(key, 0) + int(number)
    if not found:
        return ""
    return f"{found.get('passed', 0)}/{found.get('failed', 0)}/{found.get('skipped', 0)}"


def _where(e: Evidence) -> str:
    text = f"{e.part.name} ({e.part.host}, {e.part.created})"
    if e.row is not None:
        part = f" part {e.row['part']}" if e.row.get("part") else ""
        sec = e.row.get("seconds")
        text += f" {e.row.get('result')}{part} {counts(e.row) or '-'} p/f/s"
        text += f" {sec:.1f}s" if isinstance(sec, (int, float)) else ""
    elif e.verdict != "passed":
        text += f" {e.verdict}"
    return text


def _listing(items: Sequence[Item]) -> str:
    return ", ".join(f"shard {i.shard}" if i.shard else i.nodeid.removeprefix("tests/") for i in items)


def summary_lines(j: Judgement) -> list[str]:
    lines = [f"Release set of the {j.flavor} flavor over {len(j.parts)} run(s) of wheel sha256 {j.wheel_sha256}:"]
    for p in j.parts:
        lines.append(f"  run {p.name}: {p.host}, {p.created}, its own verdict {p.outcome}, "
                     f"{len(p.verdicts)} release gates ran")
    w = max((len(i.nodeid) for i in j.items), default=0)
    for i in j.items:
        who = "; ".join(_where(e) for e in i.evidence) or "-"
        detail = f" -- {i.detail[:200]}" if i.detail and i.state != PASS else ""
        lines.append(f"  {i.state:<10} {i.nodeid:<{w}}  {who}{detail}")
    for name, why in j.ignored:
        lines.append(f"  ignored {name}: {why}")
    for p in j.parts:
        if p.development:
            lines.append(f"  development run {p.name}: {'; '.join(p.development)[:300]}: this verdict cannot publish")
    total, state = len(j.items), j.state
    head = (f"RELEASE {j.wheel}: {state} ({j.done}/{total}) over the {j.flavor} release set from "
            f"{len(j.parts)} run(s) on identical bytes")
    if state == PASS:
        return [*lines, head]
    said = [f"{label}: {_listing(j.named(s))}" for label, s in
            (("failed", FAILED), ("not judged", NOT_JUDGED_STATE), ("not run", NOT_RUN)) if j.named(s)]
    return [*lines, f"{head}; " + "; ".join(said)]


# --------------------------------------------------------------------------------------------
# A split release made publishable: the signed release report of a whole-set PASS over the parts
# --------------------------------------------------------------------------------------------
def release_facts_of(parts: Sequence[Part]) -> publish.ReleaseFacts:
    """The release notes' facts from the parts that audited the build's CMake cache (the run that
    built the wheel, with --mxnet-src): each such part must say the same, as they audited the same
    bytes of the same build."""
    audited = [(p, publish.release_facts(p.facts)) for p in parts
               if p.facts is not None and (p.facts.get("cmake") or {}).get("features")]
    if not audited:
        raise PublishRefused("release report NOT written: no run among the parts audited the build's CMake "
                             "cache (the release run that built the wheel, with --mxnet-src): the release notes "
                             "could not name the features the wheel was built with")
    first, facts = audited[0]
    other = next((p for p, f in audited[1:] if f != facts), None)
    if other is not None:
        raise PublishRefused(f"release report NOT written: {first.name} and {other.name} audited the same wheel "
                             "but report other features, archs or commit stamps: judge the parts of one build")
    return facts


def write_release_report(j: Judgement, wheel: Path, report: Path, src: Path, remote: str) -> list[str]:
    """``tools.release_verify --release-report=R``: R as the one-run path writes it (harness.finish's
    publish row, build_steps.release_report), for ``mxnet-release publish --report=R``; only for a
    PASS of the flavor's whole committed release set on ``wheel``'s bytes. What the one-run path
    checks before it writes R is checked here with its own functions: no development run, the
    wheel's version is the release's and its tag is free locally and on ``remote``, the wheel's
    commit stamp is the tree's HEAD (a clean tree), the key lies where no sandbox reads it
    (write_report). The wheel goes to the tree's dist/ (as the one-run path's does) and R names
    that copy. R also records the parts it was judged from (each report's sha256, host, date);
    the judgement's table and the parts' reports are attached to the release with their sha256,
    which the publish step checks again. Returns the lines to print; raises a HarnessError
    (PublishRefused, ReportRefused: nothing is written)."""
    if j.state != PASS:
        raise PublishRefused(f"release report NOT written: the {j.flavor} release set is {j.state} on this wheel")
    development = [p for p in j.parts if p.development]
    if development:
        p = development[0]
        raise PublishRefused(f"release report NOT written: {p.name} is a development run "
                             f"({'; '.join(p.development)[:200]}): such a verdict cannot publish")
    if sha256_of(wheel) != j.wheel_sha256:
        raise PublishRefused(f"release report NOT written: {wheel} no longer hashes to {j.wheel_sha256}, "
                             "the sha256 the parts judged")
    try:
        facts = release_facts_of(j.parts)
        state = publish.preflight(src, remote, dry_run=True)
        release = publish.resolve_release_version(state, get_profile(j.flavor), wheel=wheel)
        publish.check_commit(facts, state.head)
    except PublishFailed as exc:  # a refusal, as the publish step words it: nothing was written
        raise PublishRefused(f"release report NOT written: {exc}") from None
    # before anything is written: write_report checks the key's place again, with dist/'s copy
    check_key_place(key_path(), also=[state.repo, Path(wheel).parent])
    upload = package.publish_to_dist(wheel, state.repo / "dist", sha256=j.wheel_sha256, src=state.repo,
                                     remote_tags=state.remote_tags)
    report = Path(report)
    table = report.with_name(report.stem + ".release-set.txt")
    text = "\n".join(summary_lines(j)) + "\n"
    write_atomic(table, lambda fh: fh.write(text), binary=False)
    parts = [{"file": p.name, "sha256": sha256_of(p.path) if p.path else "", "host": p.host,
              "created": p.created, "outcome": p.outcome} for p in j.parts]
    assets = [table, *(p.path for p in j.parts if p.path is not None)]
    passed = sorted(i.nodeid for i in j.items if i.state == PASS)
    excused = sorted(i.nodeid for i in j.items if i.state == EXCUSED)
    try:
        write_report(report, release_content(
            flavor=j.flavor, repo=state.repo, remote=state.remote, version=release.version, tag=release.tag,
            commit=state.head, wheel=upload, sha256=j.wheel_sha256, facts=dataclasses.asdict(facts),
            gates_passed=passed, verdicts={i.nodeid: "passed" if i.state == PASS else "excused" for i in j.items},
            excused=excused, assets=[Path(a).resolve() for a in assets], parts=parts))
    except BaseException:
        table.unlink(missing_ok=True)  # no table of a report that was not written
        raise
    return [f"release report written to {report} (tag {release.tag}, wheel {upload}, {len(parts)} part(s)); "
            f"publish with: mxnet-release publish --report={report} --dry-run, then --yes"]
