"""The run's one record of verdicts (issue 47 item 1): every gate's verdict and the facts of its kind,
filed once by harness.plugins.ledger in the process that reports the run (HarnessRun.ledger), and the run's
clock. Plain data: the end of the run's rows and reports read it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Entry:
    """One gate's verdict in the ledger."""
    verdict: str = "not run"     # passed / failed / skipped / xfailed / not judged / not run
    why: str = ""
    markers: tuple[str, ...] = ()
    finished: bool = False       # its teardown was reported
    when: str = ""               # the phase (setup / call / teardown) that decided the verdict
    rerun: str = ""              # why an earlier attempt failed, when a rerun plugin retried it
    # Facts of the gate's kind, in the words their reports use (HarnessRun's views below):
    #: a provenance gate's (pytest's outcome, why)
    provenance: tuple[str, str] | None = None
    #: a GPU gate's {verdict, message, gpu, wheel} (the GPU it ran on: harness.plugins.gate_gpus)
    gpu_run: dict[str, Any] | None = None
    #: an acceptance shard gate's shard id, and its row of the shard table (build_steps.acceptance.run's result)
    shard_id: str = ""
    shard_row: dict[str, Any] | None = None


@dataclass
class Ledger:
    """nodeid -> Entry of every test this run reported (on the controller: every worker's)."""
    entries: dict[str, Entry] = field(default_factory=dict)

    def verdicts(self) -> dict[str, str]:
        """nodeid -> final verdict of every test that reported one or finished, the publish gate
        aside (it judges the others: harness.plugins.publish_run)."""
        return {n: e.verdict for n, e in self.entries.items() if (e.when or e.finished) and "publish" not in e.markers}

    def results(self) -> dict[str, tuple[str, str]]:
        """The gate table's rows: nodeid -> (verdict, why) of every release gate with a verdict."""
        return {n: (e.verdict, e.why) for n, e in self.entries.items() if "release" in e.markers and e.when}

    def refuse(self, nodeid: str, why: str) -> None:
        """A gate judged again after every gate reported (the end of the run's publish row): failed."""
        entry = self.entries.setdefault(nodeid, Entry(markers=("publish", "release")))
        entry.verdict, entry.why, entry.when = "failed", why, entry.when or "call"


@dataclass
class Clock:
    """The run's wall clock and the gates' summed setup and call times (the page's timeline)."""
    start: float
    setup: float = 0.0
    call: float = 0.0
