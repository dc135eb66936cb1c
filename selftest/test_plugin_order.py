"""The root conftest's plugin list is no condition of any verdict (issue 35).

Each plugin is a thin adapter over the run's state and the end of the run is one table
(harness.plugins.finish.FINISH), so the order pytest registers the plugins in must change nothing. A copy
of this checkout (its tracked files) runs the same audits with conftest.py's ``pytest_plugins``
as written, reversed, and shuffled; the exit code, the gate table, the summary's lines and the
JSON report's verdicts must be the same. A good wheel serially, a wheel with an executable stack
under ``-n 2`` (a failed gate, the xdist controller's ledger).
"""
from __future__ import annotations

import ast
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT, host_opencv

pytestmark = pytest.mark.slow


def plugin_list(conftest: Path) -> list[str]:
    """conftest.py's pytest_plugins, read with ast (never imported)."""
    for node in ast.parse(conftest.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytest_plugins" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    raise AssertionError(f"{conftest}: no pytest_plugins list")


def with_plugins(conftest: Path, order: list[str]) -> None:
    """Rewrite the list in ``conftest`` to ``order`` (same names, comments dropped)."""
    text = conftest.read_text()
    start = text.index("pytest_plugins = [")
    end = text.index("]\n", start) + 2
    conftest.write_text(text[:start] + "pytest_plugins = [\n" + "".join(f"    {n!r},\n" for n in order)
                        + "]\n" + text[end:])
    assert plugin_list(conftest) == order


@pytest.fixture(scope="module")
def harness_copy(tmp_path_factory) -> Path:
    """The checkout's tracked files, beside nothing else (its own tests/, pytest.ini, conftest.py)."""
    dest = tmp_path_factory.mktemp("plugin-order") / "harness"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=HARNESS_ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = HARNESS_ROOT / rel
        if rel.startswith("selftest/") or not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    return dest


def _audit(copy: Path, wheel: str, src: str, out: Path, *extra: str) -> dict:
    out.mkdir(parents=True)
    report = out / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(copy / "pytest.ini"), "--rootdir", str(copy),
         "-p", "no:cacheprovider", str(copy / "tests"), "-m", "provenance", f"--wheel={wheel}",
         f"--mxnet-src={src}", f"--provenance-json={report}", f"--review-page={out / 'page.html'}",
         f"--basetemp={out / 'run'}", *host_opencv(extra)],
        cwd=copy, capture_output=True, text=True, timeout=900)
    text = proc.stdout + proc.stderr
    # the harness imported is the copy's, whose plugin list was rewritten
    assert "MXNet release gates" in text, text[-3000:]
    table = text[text.index("MXNet release gates"):]
    table = table[:table.index("short test summary") if "short test summary" in table else len(table)]
    # each order writes into its own dir: the dir's name is no part of the verdict
    lines = [re.sub(r"\d+(\.\d+)?s\b", "Ns", ln.rstrip().replace(str(out), "OUT"))
             for ln in table.splitlines() if ln.strip()]
    doc = json.loads(report.read_text()) if report.exists() else {}
    review = doc.get("review") or {}
    return {
        "rc": proc.returncode,
        "summary": [ln for ln in lines if not ln.startswith("=")],
        "json_keys": sorted(doc),
        "provenance": doc.get("gates") or doc.get("verdicts"),
        "review_gates": [(g["nodeid"], g["verdict"]) for g in review.get("gates", [])],
        "review_verdict": (review.get("verdict") or {}).get("outcome"),
        "page": (out / "page.html").is_file(),
    }


@pytest.mark.parametrize("wheel_key, extra, rc", [("good_cuda", (), 0), ("variants/exec_stack", ("-n", "2"), 1)],
                         ids=["good-serial", "failing-xdist"])
def test_plugin_order_changes_no_verdict(harness_copy, selftest_wheels, tmp_path, wheel_key, extra, rc):
    conftest = harness_copy / "conftest.py"
    written = plugin_list(HARNESS_ROOT / "conftest.py")
    shuffled = written[:]
    random.Random(35).shuffle(shuffled)
    assert shuffled != written and shuffled != written[::-1]
    seen = {}
    for name, order in (("as written", written), ("reversed", written[::-1]), ("shuffled", shuffled)):
        with_plugins(conftest, order)
        wheel = selftest_wheels["variants"][wheel_key.split("/")[1]] if "/" in wheel_key else selftest_wheels[wheel_key]
        seen[name] = _audit(harness_copy, wheel, selftest_wheels["src"],
                            tmp_path / name.replace(" ", "-"), *extra)
    base = seen["as written"]
    assert base["rc"] == rc and base["page"] and base["review_gates"], base
    if rc:
        assert any(ln.startswith("FAILED") and "test_no_executable_stack" in ln for ln in base["summary"]), base
    for name in ("reversed", "shuffled"):
        assert seen[name] == base, f"plugin order {name} changed the run:\n{seen[name]}\nvs as written:\n{base}"
