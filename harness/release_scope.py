"""The flavor's release set: every gate a release of this flavor must pass, whatever the run selected.

The set is the committed manifest of the flavor (build_steps.release_manifest), not this run's
collection: ``-m``/``-k``, ``--sw``, ``--lf``, ``--shards``, an ini's ``python_functions`` or a
disabled plugin change what is collected or run, never what a publish needs. The publish gate
compares the verdicts of the run, once every other gate has finished, with this set and lists
every id that did not pass. Release gates the run collected from elsewhere (a site's own:
``HarnessRun.collected``, filed by harness.plugins.collected_gates) are added to the set, never taken from it.
"""
from __future__ import annotations

from build_steps.release_manifest import ReleaseSet, left_out_by_flavor, load_manifest

from .state import HarnessRun


def release_set_of(run: HarnessRun) -> ReleaseSet:
    """The flavor's manifest plus the other release gates this run collected (the publish gate is
    the set's judge, never a member)."""
    profile = run.options.profile
    manifest = load_manifest(profile.name)
    extra = [n for n, marks in run.collected.items()
             if "publish" not in marks and left_out_by_flavor(marks, profile) is None]
    return ReleaseSet(flavor=profile.name, gates=list(manifest.gates)).including(extra)


def scope_line(run: HarnessRun, verdicts: dict[str, str]) -> str | None:
    """One line saying what a verdict over ``verdicts`` (nodeid -> verdict) covers, when that is not
    the whole release set: "46 of the cuda release set's 104 gates ran: not a release verdict"."""
    rset = release_set_of(run)
    if rset is None or not rset.size():
        return None
    ran = sum(1 for n in rset.gates if verdicts.get(n, "not run") != "not run")
    if ran == rset.size():
        return None
    return (f"{ran} of the {rset.flavor} release set's {rset.size()} gates ran: not a release verdict "
            "(the review page lists the rest by marker)")
