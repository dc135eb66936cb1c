"""The fork's wheel acceptance suite: each shard of tools/run_wheel_full_test.sh is a gate.

A shard runs ``python -m pytest <its args>`` with the throwaway venv's interpreter, from the source
tree (--mxnet-src), mxnet importing from the venv. It passes only when its pytest passed: failed
tests, errors, a timeout, a crash, and a shard that ran no test at all each fail the gate, whose
message is the shard's pytest summary line and its first failing tests (the full output is in the
shard's log). GPU shards run when the installed wheel reports a GPU; oneDNN shards when its
Features have ONEDNN; otherwise they skip, which a release run counts as a failure.
"""
import os

import pytest

from build_steps.acceptance.run import gpu_for_worker, run_shard
from build_steps.profile_data import FEATURE_ALIASES
from harness.shard_plan import selected_shards, shard_timeout_override
from harness.state import the_run

pytestmark = [pytest.mark.release, pytest.mark.runtime, pytest.mark.acceptance]


def pytest_generate_tests(metafunc):
    if "shard" in metafunc.fixturenames:
        override = shard_timeout_override(the_run(metafunc.config))
        params = []
        for s in selected_shards(the_run(metafunc.config)):
            # pytest-timeout (pytest.ini: 900 s) would cut a 30-minute shard short: the shard's own
            # timeout kills its pytest first, and the gate gets two minutes more to write the verdict.
            marks = [pytest.mark.timeout((override or s.timeout_min) * 60 + 120)]
            if s.lane == "gpu":
                marks.append(pytest.mark.gpu)
            params.append(pytest.param(s, id=s.id, marks=marks))
        metafunc.parametrize("shard", params)


def test_source_tree_has_the_suite(acceptance_plan):
    root = acceptance_plan["root"]
    assert root is not None, ("the fork's acceptance suite runs the tests of the MXNet source tree: pass "
                              "--mxnet-src=<the checkout the wheel was built from>")
    assert (root / "tests" / "python").is_dir(), (
        f"{root} has no tests/python: the acceptance shards cannot run; pass the full checkout as --mxnet-src")


def _has_onednn(features: dict) -> bool:
    return any(features.get(name) for name in FEATURE_ALIASES.get("ONEDNN", ("ONEDNN",)))


def test_shard(shard, acceptance_plan, acceptance_venv, request):
    request.node.user_properties.append(("acceptance_shard", {"id": shard.id, "lane": shard.lane}))
    request.node.user_properties.append(("acceptance_mxnet", {
        k: acceptance_venv.get(k) for k in ("version", "file", "num_gpus", "features")}))
    if acceptance_venv["problems"]:
        pytest.fail("; ".join(acceptance_venv["problems"]), pytrace=False)
    env = {}
    if shard.lane == "gpu":
        gpus = acceptance_venv.get("num_gpus") or 0
        if gpus < 1:
            pytest.skip(f"the installed wheel reports mxnet num_gpus() == 0 "
                        f"({acceptance_venv.get('num_gpus_error') or 'no GPU it can use'}): the GPU shards "
                        "need a GPU the wheel sees (a CPU wheel, or no driver)")
        visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()] \
            or [str(i) for i in range(gpus)]
        worker = getattr(request.config, "workerinput", {}).get("workerid")
        pinned = gpu_for_worker(worker, visible)
        if pinned is not None:
            env["CUDA_VISIBLE_DEVICES"] = pinned
    if shard.lane == "dnnl" and not _has_onednn(acceptance_venv.get("features") or {}):
        pytest.skip("the installed wheel's Features() do not have ONEDNN enabled: the oneDNN shards need it")
    result = run_shard(shard, acceptance_venv["venv"], acceptance_plan["root"], acceptance_plan["dir"] / "shards",
                       parallel=acceptance_plan["parallel"], cwd=acceptance_plan["suite"].cwd,
                       timeout_min=acceptance_plan["timeout"], env=env,
                       part=(acceptance_plan.get("split") or {}).get(shard.id))
    request.node.user_properties.append(("acceptance_result", result.to_dict()))
    if result.result != "PASS":
        pytest.fail(result.message(), pytrace=False)
