"""Issue 11, point 6: a run that selected GPU gates on a host without a GPU is not green, unless
the user accepts the skips with --allow-gpu-skips."""
from __future__ import annotations

import json
import os

import pytest

from build_steps.run_as import sandbox_ids

from selftest.fixtures_runtime import runtime_args


@pytest.mark.slow
def test_gpu_gates_selected_without_a_gpu_are_not_green(gates, mxnet191_wheel, mxnet191_wheelhouse, tmp_path):
    # The GPU runner's recipe on a host that lost its GPU (this CI host has none).
    r = gates("-m", "gpu or cublas", *runtime_args(mxnet191_wheel, mxnet191_wheelhouse), "--flavor=cuda")
    out = r.stdout.str()
    assert r.parseoutcomes().get("skipped") == 12, out[-3000:]
    assert r.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    r.stdout.fnmatch_lines(["NOT GREEN: 12 GPU gate(s) were selected but did not run (no CUDA GPU on this host*"
                            "--allow-gpu-skips"])
    # The same selection with --allow-gpu-skips is green: the serial run of the next selftest is that
    # run (one venv install fewer, ~30 s of CI), and asserts it (assert_skips_accepted).


def assert_skips_accepted(run) -> None:
    """A run of the 12 GPU gates on this GPU-less host with --allow-gpu-skips: green, and it says so."""
    assert run.ret == pytest.ExitCode.OK, run.stdout.str()[-3000:]
    run.stdout.fnmatch_lines(["GPU gates: 12 selected and skipped (no CUDA GPU on this host*"
                              "accepted with --allow-gpu-skips"])


def _gpu_verdicts(path) -> dict:
    import json
    doc = json.loads(path.read_text())
    return {n: (g["verdict"], g["message"]) for n, g in doc["gpu_verification"]["gates"].items()}


@pytest.mark.slow
def test_gpu_json_under_xdist_equals_the_serial_one(gates, mxnet191_wheel, mxnet191_wheelhouse, tmp_path):
    # Issue 19, item 5: under -n 2 the GPU gates' messages were a worker banner, not the skip reason.
    args = ["-m", "gpu or cublas", *runtime_args(mxnet191_wheel, mxnet191_wheelhouse), "--flavor=cuda",
            "--allow-gpu-skips", "-p", "no:randomly"]
    serial = gates(*args, f"--provenance-json={tmp_path / 'serial.json'}")
    assert_skips_accepted(serial)  # the previous selftest's selection, accepted
    spread = gates(*args, "-n", "2", f"--provenance-json={tmp_path / 'xdist.json'}")
    assert serial.ret == spread.ret == pytest.ExitCode.OK, spread.stdout.str()[-3000:]
    serial_v, spread_v = _gpu_verdicts(tmp_path / "serial.json"), _gpu_verdicts(tmp_path / "xdist.json")
    assert len(serial_v) == 12 and all(v == "skipped" for v, _ in serial_v.values()), serial_v
    assert all(msg.startswith("no CUDA GPU on this host") for _, msg in serial_v.values()), serial_v
    assert spread_v == serial_v
    # the report says who the wheel's code ran as, measured in a sandbox: root's runs drop to the
    # sandbox uid with no capability (the GPU host's record needs this, not the code path assumed)
    for name in ("serial.json", "xdist.json"):
        who = json.loads((tmp_path / name).read_text())["sandbox"]
        assert who["harness_euid"] == os.geteuid() and who["step_cap_eff"] == "0000000000000000", who
        assert who["step_uid"] == (sandbox_ids()[0] if os.geteuid() == 0 else os.geteuid()), who
        assert who["step_uid"] != 0, who
