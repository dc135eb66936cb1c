"""The publish gate: tag and release the wheel, only after every other gate of this run passed.

It is collected only with --publish and always runs last (harness/publish.py). It reads
the facts of this run's provenance audit for the release notes, re-checks the tree and the tags
(an hour-long build leaves time for someone else to publish), and then either prints the exact
commands (--dry-run) or runs them (--yes).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps import package, publish
from build_steps.errors import HarnessError
from build_steps.pinning import source_changed, verify
from harness import review
from harness.release_set import ReleaseSet, release_set_of

pytestmark = [pytest.mark.release, pytest.mark.publish]


# Waiting for other workers' gates may take longer than pytest-timeout's default; the commands
# themselves carry their own time limits.
@pytest.mark.timeout(0)
def test_publish(request, options, profile):
    plugin = request.config.pluginmanager.get_plugin("mxnet-publish")

    def record(**facts):
        request.node.user_properties.append(("mxnet_publish", facts))

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
    others = [item.nodeid for item in request.session.items if item is not request.node]
    if not others:
        pytest.fail("publish refused: no other gate ran in this session; a release is published "
                    "only from a full run: pytest -m release --publish ...")
    verdicts = plugin.verdicts_of(others)
    # The whole release set of the flavor, not only what this run selected: a gate left out by
    # -m/-k or a module not on the command line verified nothing.
    rset = (release_set_of(request.config) or ReleaseSet()).including(others)
    not_passed = rset.not_passed(verdicts)
    if not_passed:
        listing = "\n".join(f"  {verdict.upper():13} {nodeid}" for nodeid, verdict in not_passed)
        pytest.fail(f"publish refused: {len(not_passed)} of {rset.size()} gates of the {profile.name} "
                    "release set did not pass in this run (every gate must be collected, run and pass: "
                    f"no -m narrowing, -k, deselection or skip)\n{listing}", pytrace=False)
    ran = sorted(rset.gates)  # every one of them passed

    wheel = request.getfixturevalue("wheel_path")
    release = plugin.release
    if publish.wheel_version(wheel) != release.version:
        pytest.fail(f"publish refused: {wheel.name} carries version {publish.wheel_version(wheel)}, "
                    f"but this run releases {release.version} ({release.source}); the build did "
                    "not use the release version (options.wheel_version)", pytrace=False)
    facts = publish.release_facts(request.getfixturevalue("audit"))

    # Re-read the repository now: HEAD, a clean tree and free tags, as at session start.
    state = publish.preflight(plugin.src, options.remote, dry_run=options.dry_run, yes=options.yes)
    publish.resolve_release_version(state, profile, explicit=release.version)
    publish.check_commit(facts, state.head)
    upload = _verified_upload(request, options, state, wheel)
    pin = request.getfixturevalue("wheel_pin")
    # The review page goes up with the wheel: what the reviewer saw is what the release shows.
    page = review.publish_page(request.config, _page_path(request, options), request.getfixturevalue("audit"),
                               verdicts, pin)
    plan = publish.plan_release(state, release, profile, facts, upload, gates=ran, digest=pin.sha256,
                                assets=[page])

    if options.dry_run:
        print("\n".join(plan.printable()))
        record(published=False, dry_run=True, tag=plan.tag, wheel=str(plan.wheel),
               commands=plan.printable())
        return
    url = publish.execute(plan)
    record(published=True, tag=plan.tag, url=url, wheel=str(plan.wheel))


def _verified_upload(request, options, state, wheel):
    """The file the release uploads: exactly the bytes the gates judged (the run's pin).

    A built wheel is uploaded from dist/, where it is placed first (verified while copied, all or
    nothing); a dry run names that path without writing it. A ``--wheel`` is uploaded from where
    the user named it, after checking it still hashes to the pin.
    """
    pin = request.getfixturevalue("wheel_pin")
    verify(pin, "the publish")
    if options.wheel is not None:
        changed = source_changed(pin)
        if changed:
            pytest.fail(f"publish refused: {changed}", pytrace=False)
        return Path(pin.source)
    paths = request.getfixturevalue("build_paths")
    if options.dry_run:
        return paths.dist / wheel.name
    return package.publish_to_dist(Path(pin.source), paths.dist, sha256=pin.sha256, src=paths.src,
                                   remote_tags=state.remote_tags)


def _page_path(request, options) -> Path:
    """Where the release's review page is written: --review-page, else the build's harness-logs/,
    else (an existing --wheel) the run's shared dir."""
    explicit = request.config.getoption("review_page", None)
    if explicit is not None:
        return Path(explicit)
    if options.wheel is None:
        return request.getfixturevalue("build_paths").logs / "review.html"
    return request.getfixturevalue("shared_dir") / "review.html"
