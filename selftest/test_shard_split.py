"""Issue 31, point 5: ``--shard-split=SHARD:K/N`` runs a deterministic part of a large acceptance
shard, the N parts cover it exactly, and tools.gpu_verify adds the parts of runs of one wheel up:
an arch is verified when they cover every GPU gate, and a missing part leaves it INCOMPLETE naming
the part."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps import gpu_reports
from build_steps.acceptance.run import SHARD_PART_DIR, SHARD_PART_ENV, SHARD_PART_PLUGIN
from build_steps.acceptance.selection import parse_shard_split
from build_steps.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
REPORTS = Path(__file__).resolve().parent / "gpu_reports"
SHARD = "tests/test_acceptance.py::test_shard[gpu_operator_numpy]"
#: a real test file with parametrized tests (its ids are what the fork's pytest would see)
REAL_FILE = "selftest/test_gpu_merge.py"


def _collected(part: str | None) -> list:
    """The ids pytest collects from REAL_FILE with the shard's part plugin, as run_shard loads it."""
    env = {**os.environ, "PYTHONPATH": str(SHARD_PART_DIR)}
    env.pop(SHARD_PART_ENV, None)
    if part:
        env[SHARD_PART_ENV] = part
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", SHARD_PART_PLUGIN,
                          "-p", "no:randomly", "-p", "no:cacheprovider", REAL_FILE], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_the_parts_of_a_real_test_file_cover_it_exactly_and_do_not_move():
    whole = _collected(None)
    assert len(whole) > 10, whole
    parts = [_collected(f"{k}/3") for k in (1, 2, 3)]
    assert all(parts), [len(p) for p in parts]
    assert sorted(sum(parts, [])) == sorted(whole), "the three parts together are the file's tests, each once"
    assert _collected("2/3") == parts[1], "the same part twice: the same tests"


def test_shard_split_option_values_are_checked():
    known = ("gpu_operator_numpy", "cpu_unittest")
    assert parse_shard_split(["gpu_operator_numpy:2/3"], known) == {"gpu_operator_numpy": (2, 3)}
    for bad, said in (("gpu_operator_numpy", "write SHARD:K/N"), ("nope:1/2", "no shard 'nope'"),
                      ("gpu_operator_numpy:4/3", "1 <= K <= N"), ("gpu_operator_numpy:1/1", "N >= 2")):
        with pytest.raises(UsageError, match=said):
            parse_shard_split([bad], known)
    with pytest.raises(UsageError, match="split twice"):
        parse_shard_split(["cpu_unittest:1/2", "cpu_unittest:2/2"], known)


def _hold(doc: dict, keep, part: str | None, host: str) -> dict:
    """One GPU hold's report: the gates ``keep`` selects, the split shard as ``part`` of it."""
    out = json.loads(json.dumps(doc))
    section = out["gpu_verification"]
    section["host"] = host
    gates = {n: g for n, g in section["gates"].items() if keep(n)}
    if part:
        gates[SHARD] = {**doc["gpu_verification"]["gates"][SHARD], "part": part}
    section["gates"] = gates
    out["gates"] = {n: g for n, g in out["gates"].items() if n in gates or "gpu" not in n}
    return out


def _write(d: Path, docs: dict) -> Path:
    d.mkdir(exist_ok=True)
    for old in d.glob("*.json"):
        old.unlink()
    for name, doc in docs.items():
        (d / name).write_text(json.dumps(doc))
    return d


def test_parts_from_three_holds_of_one_wheel_verify_the_arch_and_a_missing_part_is_named(tmp_path):
    doc = json.loads((REPORTS / "a100.json").read_text())
    assert SHARD in doc["gpu_verification"]["gates"]
    rest = lambda n: n != SHARD  # noqa: E731
    none = lambda n: False  # noqa: E731
    holds = {"hold1.json": _hold(doc, rest, "1/3", "gpu-host-hold1"),
             "hold2.json": _hold(doc, none, "2/3", "gpu-host-hold2"),
             "hold3.json": _hold(doc, none, "3/3", "gpu-host-hold3")}
    d = _write(tmp_path / "reports", holds)
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.state("sm_80") == "verified", gpu_reports.summary_lines(merged)

    # the third hold lost: INCOMPLETE, naming the part
    _write(d, {k: v for k, v in holds.items() if k != "hold3.json"})
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.state("sm_80") == "incomplete"
    assert merged.missing("sm_80") == [f"{SHARD} (part 3/3 missing)"]
    assert f"{SHARD} (part 3/3 missing)" in "\n".join(gpu_reports.summary_lines(merged))

    # the third part from a run of other bytes does not count (gpu_verify adds up one sha256)
    other = json.loads(json.dumps(holds["hold3.json"]))
    other["wheel"]["sha256"] = "f" * 64
    _write(d, {**{k: v for k, v in holds.items() if k != "hold3.json"}, "other.json": other})
    merged = gpu_reports.merge(gpu_reports.load_reports(d), wheel_sha256=doc["wheel"]["sha256"], cuda_arch="8.0")
    assert merged.state("sm_80") == "incomplete"

    # parts of another split (1/2) do not complete a 3-way split
    half = _hold(doc, none, "2/2", "gpu-host-hold4")
    _write(d, {**{k: v for k, v in holds.items() if k != "hold3.json"}, "half.json": half})
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.state("sm_80") == "incomplete"

    # one GPU in several holds (the same host and GPU): counted once, its parts added up
    same = {k: _hold(doc, rest if k == "hold1.json" else none, f"{i}/3", "gpu-host")
            for i, k in enumerate(holds, 1)}
    _write(d, same)
    merged = gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0")
    assert merged.state("sm_80") == "verified", gpu_reports.summary_lines(merged)


def test_a_part_that_failed_fails_the_arch(tmp_path):
    doc = json.loads((REPORTS / "a100.json").read_text())
    bad = _hold(doc, lambda n: False, "2/3", "gpu-host-hold2")
    bad["gpu_verification"]["gates"][SHARD]["verdict"] = "failed"
    d = _write(tmp_path / "reports", {"hold1.json": _hold(doc, lambda n: n != SHARD, "1/3", "h1"),
                                      "hold2.json": bad})
    assert gpu_reports.merge(gpu_reports.load_reports(d), cuda_arch="8.0").state("sm_80") == "failed"
