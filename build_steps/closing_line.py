"""The run's closing line: the wheel, the verdict over the gates (or over the flavor's release set
in a publish run), and what was published (harness.plugins.publish_run prints it last)."""
from __future__ import annotations

from typing import Any


def closing_line(gates: dict[str, str], out: dict[str, Any], *, publish: bool, interrupted: bool, not_judged: int,
                 wheel: str, placed: bool, stopped: str | None) -> tuple[str, bool]:
    """(the line, whether it is green). ``gates``: nodeid -> verdict; ``out``: the publish row's
    outcome (HarnessRun.publish_outcome); ``not_judged``: gates the host kept from judging in a run
    that ended not judged (exit 3); ``stopped``: what stopped the build chain."""
    passed = sum(v == "passed" for v in gates.values())
    verdict = "PASS" if gates and passed == len(gates) else "FAIL"
    counted = f"{passed}/{len(gates)} gates passed"
    if "set_size" in out:
        # A publish run is judged against the flavor's release set, not against what it ran.
        verdict = "PASS" if verdict == "PASS" and out["set_passed"] == out["set_size"] else "FAIL"
        counted = f"{out['set_passed']}/{out['set_size']} gates of the {out['flavor']} release set passed"
    if not_judged:
        # the host kept gates from judging and none judged FAIL (harness.plugins.finish.judge); under
        # xdist the stop after the fault reaches the summary as an interrupt
        verdict = "ERROR (not judged)"
        counted += f"; {not_judged} not judged"
    elif interrupted:
        verdict = "INTERRUPTED"
    if not publish:
        published = "not published (--publish not given)"
    elif out.get("published"):
        published = f"PUBLISHED as {out.get('tag')} ({out.get('url')})"
    elif out.get("dry_run"):
        published = f"not published (dry run of {out.get('tag')})"
    elif out.get("prepared"):
        published = (f"not published yet: release report {out.get('report')} written for {out.get('tag')}; "
                     f"publish with mxnet-release publish --report={out.get('report')} --yes")
    elif out.get("reason"):
        published = f"NOT published: {out['reason']}"
    else:
        published = "NOT published (the publish gate did not run)"
        verdict = "FAIL" if verdict == "PASS" else verdict
    if stopped and not placed:
        # the gates that ran before the chain stopped are no tally of a release
        return f"RELEASE no wheel: {stopped}; {published}", False
    return f"RELEASE {wheel}: {verdict} ({counted}); {published}", verdict == "PASS"
