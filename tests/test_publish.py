"""The publish gate: a --publish run's slot in the gate table. The release itself is a row of the
end of the run (harness.plugins.publish_run.release_after_the_gates, FINISH's "publish"), once every
gate has reported.

It is collected only with --publish (harness/plugins/publish_run.py) and waits for no other gate. It
refuses a run whose session start chose no release version or whose harness plugins are not all
active, and files the flavor's release set as this process collected it. The end of the run
compares every gate's verdict (harness.plugins.ledger, the one record of the run, which xdist fills on its
controller) with that set and only then checks the wheel and the tree again and prints the exact
commands (--dry-run) or writes the release report (--release-report=R) that the privileged step
``mxnet-release publish --report=R`` publishes from (issue 29: this run holds no credential). A
refusal there is this gate's verdict in the gate table.
"""
from __future__ import annotations

import pytest

from harness.common import disabled_plugins_message, inactive_harness_plugins
from harness.verdicts import OUTCOME_PROPERTY, PLAN_PROPERTY
from harness.release_scope import release_set_of
from harness.state import the_run

pytestmark = [pytest.mark.release, pytest.mark.publish]


def test_publish(request):
    plugin = request.config.pluginmanager.get_plugin("mxnet-publish")
    refused = None
    if plugin is None or plugin.release is None:
        refused = ("publish refused: no release version was chosen at session start "
                   "(the publish preflight did not run); run with --publish")
    elif inactive := inactive_harness_plugins(request.config):
        refused = f"publish refused: {disabled_plugins_message(inactive)}"
    if refused:
        # what the run's closing line says (harness.plugins.publish_run), filed by the ledger
        request.node.user_properties.append((OUTCOME_PROPERTY, {"published": False, "reason": refused}))
        pytest.fail(refused, pytrace=False)
    # The flavor's manifest (build_steps/release_sets/), not what this run collected or selected,
    # plus the release gates this process collected from elsewhere (the set's judge is no member).
    rset = release_set_of(the_run(request.config)).including(
        i.nodeid for i in request.session.items if i is not request.node and i.get_closest_marker("release"))
    request.node.user_properties.append((PLAN_PROPERTY, {"nodeid": request.node.nodeid, "gates": rset.gates}))
