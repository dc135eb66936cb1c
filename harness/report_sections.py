"""What the JSON report carries beyond the static gates: the wheel's identity (sha256), the
GPU gates' verdicts with the GPU each ran on (so reports of several GPU runners can be merged
per arch, ``build_steps.gpu_reports``), and the build's compiler-cache counters.

Each GPU gate's report gets the GPU in ``user_properties`` where the test runs (an xdist worker
sends it to the controller with the report); the controller collects them here.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from build_steps import gpu_reports
from build_steps.pinning import sha256_of

from .acceptance_shards import inapplicable_shard_gates, split_parts
from .common import harness_options, shared_root
from .ledger import failure_reason, produced_wheel, verdict_of
from .steps import chain_records, step_seconds

_GPU_MARKS = ("gpu", "cublas")
_PROP = "mxnet_gpu_run"
GPU_RUNS_KEY = pytest.StashKey[dict]()


def _is_gpu_gate(keywords) -> bool:
    return any(m in keywords for m in _GPU_MARKS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call" and _is_gpu_gate(item.keywords):
        funcargs = getattr(item, "funcargs", {})
        wheel = funcargs.get("wheel_path")
        report.user_properties.append((_PROP, {
            "gpu": gpu_reports.gpu_identity(funcargs.get("cuda_preflight")),
            "wheel": str(wheel) if wheel else None}))
    return report


def _runs(config) -> dict:
    if GPU_RUNS_KEY not in config.stash:
        config.stash[GPU_RUNS_KEY] = {}
    return config.stash[GPU_RUNS_KEY]


def _record(runs: dict, report) -> None:
    props = dict(report.user_properties).get(_PROP) or {}
    why = ""
    if not report.passed:
        # The reason decided where the gate ran (harness.ledger): under -n 2 the report's text on
        # the controller starts with the worker's banner, and a skip's is the longrepr tuple.
        why = (verdict_of(report) or {}).get("why") or failure_reason(getattr(report, "longreprtext", "") or "")
    if report.when == "call" or report.nodeid not in runs or not report.passed:
        runs[report.nodeid] = {"verdict": report.outcome, "message": why, "gpu": props.get("gpu"),
                               "wheel": props.get("wheel")}


class _Collector:
    """Registered on every process: reports reach the controller's hook with ``config`` unset,
    so the collector holds the config itself."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        if _is_gpu_gate(report.keywords) and not (report.when != "call" and report.passed):
            _record(_runs(self.config), report)


def pytest_configure(config):
    config.pluginmanager.register(_Collector(config), "mxnet-gpu-runs")


def has_gpu_runs(config) -> bool:
    return bool(config.stash.get(GPU_RUNS_KEY, None))


def _wheel_path(config, facts) -> Path | None:
    # The run's private copy (harness.wheel_pin) when there is one: never the user's path again.
    from .wheel_pin import load_pin
    pin = load_pin(shared_root(config))
    if pin is not None:
        return Path(pin.path)
    for run in config.stash.get(GPU_RUNS_KEY, {}).values():
        if run.get("wheel"):
            return Path(run["wheel"])
    options = harness_options(config)
    if options.wheel is not None:
        return options.wheel
    if facts is not None and getattr(facts, "wheel_file", None):
        return Path(facts.wheel_file)
    final = produced_wheel(config)
    return Path(final) if final else None


def _part_of(nodeid: str, parts: dict) -> dict:
    """{"part": "K/N"} for a gate that ran one part of a split shard (tools.gpu_verify adds parts up)."""
    return next(({"part": p} for suffix, p in parts.items() if nodeid.endswith(suffix)), {})


def extra_sections(config, facts) -> dict:
    """The JSON report's ``wheel``, ``gpu_verification`` and ``build`` sections."""
    out = {}
    wheel = _wheel_path(config, facts)
    if wheel is not None and wheel.is_file():
        out["wheel"] = {"filename": wheel.name, "sha256": sha256_of(wheel)}
    runs = config.stash.get(GPU_RUNS_KEY, {})
    parts = split_parts(config)
    gpus = {json.dumps(r["gpu"], sort_keys=True): r["gpu"] for r in runs.values() if r.get("gpu")}
    out[gpu_reports.SECTION] = {
        "host": socket.gethostname(),
        "gpus": list(gpus.values()),
        "gates": {nodeid: {**{k: v for k, v in r.items() if k != "wheel"}, **_part_of(nodeid, parts)}
                  for nodeid, r in sorted(runs.items())},
        # GPU shards the fork's own script would not run on this tree: tools.gpu_verify counts them done
        "excused": inapplicable_shard_gates(config, gpu_reports.required_gpu_gates()),
    }
    records = chain_records(shared_root(config))
    result = (records.get("compile") or {}).get("result") or {}
    if result.get("launcher"):
        out["build"] = {"compiler_launcher": result["launcher"]}
    if result.get("build_time"):
        out.setdefault("build", {})["compile_time"] = {"wall_seconds": result.get("seconds"),
                                                       **result["build_time"]}
    for key in ("toolchain", "reproducible"):
        if result.get(key):
            out.setdefault("build", {})[key] = result[key]
    steps = step_seconds(records)
    if steps:
        out.setdefault("build", {})["step_seconds"] = steps
    return out
