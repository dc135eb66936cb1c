"""The publish gate: tag and release the wheel, only after every other gate of this run passed.

It is collected only with --publish and always runs last (harness/publish_plugin.py). It reads
the facts of this run's provenance audit for the release notes, re-checks the tree and the tags
(an hour-long build leaves time for someone else to publish), and then either prints the exact
commands (--dry-run) or writes the release report (--release-report=R) that the privileged step
``mxnet-release publish --report=R`` publishes from (issue 29: this run holds no credential).
"""
from __future__ import annotations

from pathlib import Path

import dataclasses

import pytest

from build_steps import package, publish
from build_steps.pinning import sha256_of
from build_steps.release_report import write_report
from build_steps.errors import HarnessError
from build_steps.pinning import verify
from harness import report_doc
from harness.common import disabled_plugins_message, inactive_harness_plugins
from harness.release_scope import release_set_of
from harness.shard_plan import inapplicable_shard_gates
from harness.state import the_run

pytestmark = [pytest.mark.release, pytest.mark.publish]


# Waiting for other workers' gates may take longer than pytest-timeout's default; the commands
# themselves carry their own time limits.
@pytest.mark.timeout(0)
def test_publish(request, options, profile):
    plugin = request.config.pluginmanager.get_plugin("mxnet-publish")

    recorded = {}

    def record(**facts):  # one mxnet_publish property, the facts so far
        recorded.update(facts)
        props = [p for p in request.node.user_properties if p[0] != "mxnet_publish"]
        request.node.user_properties[:] = [*props, ("mxnet_publish", dict(recorded))]

    try:
        _publish(request, options, profile, plugin, record)
    except HarnessError as exc:
        record(published=False, reason=(str(exc).splitlines() or ["?"])[0])
        raise
    except pytest.fail.Exception as exc:
        record(published=False, reason=(str(exc).splitlines() or ["?"])[0])
        raise


def _publish(request, options, profile, plugin, record):
    if plugin is None or plugin.release is None:
        pytest.fail("publish refused: no release version was chosen at session start "
                    "(the publish preflight did not run); run with --publish")
    inactive = inactive_harness_plugins(request.config)
    if inactive:
        pytest.fail(f"publish refused: {disabled_plugins_message(inactive)}", pytrace=False)
    others = [item.nodeid for item in request.session.items if item is not request.node]
    verdicts = plugin.verdicts_of(others)
    # The flavor's manifest (build_steps/release_sets/), not what this run collected or selected:
    # whatever -m, -k, --sw, --lf, --shards, an ini or a plugin option left out is listed here.
    rset = release_set_of(the_run(request.config)).including(
        i.nodeid for i in request.session.items if i is not request.node and i.get_closest_marker("release"))
    excused = inapplicable_shard_gates(the_run(request.config), rset.gates)
    not_passed = rset.not_passed(verdicts, excused=excused)
    record(set_size=rset.size(), set_passed=rset.size() - len(not_passed), flavor=profile.name)
    if not_passed:
        listing = "\n".join(f"  {verdict.upper():13} {nodeid}" for nodeid, verdict in not_passed)
        pytest.fail(f"publish refused: {len(not_passed)} of {rset.size()} gates of the {profile.name} "
                    f"release set did not pass in this run (the set is build_steps/release_sets/"
                    f"{profile.name}.json; every gate of it must run and pass in one run)\n{listing}",
                    pytrace=False)
    ran = sorted(g for g in rset.gates if verdicts.get(g) == "passed")

    wheel = request.getfixturevalue("wheel_path")
    release = plugin.release
    if publish.wheel_version(wheel) != release.version:
        pytest.fail(f"publish refused: {wheel.name} carries version {publish.wheel_version(wheel)}, "
                    f"but this run releases {release.version} ({release.source}); the build did "
                    "not use the release version (options.wheel_version)", pytrace=False)
    facts = publish.release_facts(request.getfixturevalue("audit"))

    # Re-read the repository now: HEAD, a clean tree and free tags, as at session start. No gh and
    # no token here: the real publish is its own step (mxnet-release publish --report).
    state = publish.preflight(plugin.src, options.remote, dry_run=True)
    publish.resolve_release_version(state, profile, explicit=release.version)
    publish.check_commit(facts, state.head)
    upload = _verified_upload(request, options, state)
    pin = request.getfixturevalue("wheel_pin")
    # The review page goes up with the wheel: what the reviewer saw is what the release shows.
    page = report_doc.publish_page(the_run(request.config), _page_path(request, options), request.getfixturevalue("audit"),
                               verdicts, pin)
    plan = publish.plan_release(state, release, profile, facts, upload, gates=ran, digest=pin.sha256,
                                assets=[page])

    if options.dry_run:
        print("\n".join(plan.printable()))
        record(published=False, dry_run=True, tag=plan.tag, wheel=str(plan.wheel),
               commands=plan.printable())
        return
    report = request.config.getoption("release_report")
    content = {
        "flavor": profile.name, "repo": str(state.repo), "remote": state.remote,
        "release": {"version": release.version, "tag": plan.tag, "commit": state.head},
        "wheel": str(upload), "sha256": pin.sha256, "facts": dataclasses.asdict(facts),
        "gates_passed": ran, "verdicts": {g: verdicts.get(g, "not run") for g in rset.gates},
        "excused": sorted(excused), "assets": {str(page): sha256_of(page)},
    }
    write_report(report, content)
    record(published=False, prepared=True, report=str(report), tag=plan.tag, wheel=str(upload))


def _verified_upload(request, options, state):
    """The file the release uploads: the run's private copy of the wheel (build_steps.pinning),
    the bytes the gates judged, checked now and again right before the upload (publish.execute).
    dist/ gets the same bytes first (from the copy, verified while copied); a dry run writes nothing.
    """
    pin = request.getfixturevalue("wheel_pin")
    upload = verify(pin, "the publish")
    if not options.dry_run:
        # the report names dist/'s copy: the run's own dir is removed after a green run
        paths = request.getfixturevalue("build_paths")
        return package.publish_to_dist(upload, paths.dist, sha256=pin.sha256, src=paths.src,
                                       remote_tags=state.remote_tags)
    return upload


def _page_path(request, options) -> Path:
    """Where the release's review page is written: --review-page, else the build's harness-logs/,
    else (an existing --wheel) the run's shared dir."""
    explicit = request.config.getoption("review_page", None)
    if explicit is not None:
        return Path(explicit)
    if options.wheel is None:
        return request.getfixturevalue("build_paths").logs / "review.html"
    return request.getfixturevalue("shared_dir") / "review.html"
