"""The CI workflows people copy (docs/ci/): they lint clean with actionlint and zizmor, each lint
fails on the regression it exists for, and every pytest line selects exactly the markers the
README's "CI recipes" table gives for that job."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "docs" / "ci"
WORKFLOW = CI / "github-actions.yml"
ACTIONLINT_CONFIG = CI / "actionlint.yaml"
BIN = Path(sys.executable).parent

#: workflow job -> the README's CI recipe row it runs (the "job" column, as written there)
JOB_RECIPES = {
    "build": "full release on the GPU build host",
    "static": "static audit of a wheel artifact, any machine",
    "gpu": "GPU runner",
}
#: the publish job runs no pytest: mxnet-release publish reads the build job's release report (issue 29)
PUBLISH_COMMAND = "mxnet-release\" publish"


def _tool(name: str) -> str:
    exe = BIN / name
    if not exe.exists():
        pytest.fail(f"{name} is not installed in this venv: pip install -e '.[selftest]'", pytrace=False)
    return str(exe)


def actionlint(*paths) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("actionlint"), "-no-color", "-config-file", str(ACTIONLINT_CONFIG),
                           *map(str, paths)], capture_output=True, text=True, timeout=120)


def zizmor(*paths) -> subprocess.CompletedProcess:
    # --offline: no GitHub API (CI has no network); the audits that read only the files all run.
    return subprocess.run([_tool("zizmor"), "--offline", "--no-progress", *map(str, paths)],
                          capture_output=True, text=True, timeout=120)


def readme_recipes(readme: str) -> dict:
    """The README's "CI recipes" table: job -> its command (the first `code` span of the row)."""
    section = readme.split("## CI recipes", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.search(r"`([^`]+)`", cells[1]) if len(cells) > 1 else None
        if m and cells[0] not in ("job", "---"):
            out[cells[0]] = m.group(1)
    return out


def marker_expression(command: str) -> str | None:
    """The ``-m`` expression of a pytest or ``mxnet-release`` command line (None: no -m, or neither)."""
    words = shlex.split(command.replace("\n", " "))
    if "pytest" not in " ".join(words) and not any(w.endswith("mxnet-release") for w in words):
        return None
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words) and words[i + 1] != "pytest":
            return words[i + 1]
    return None


def workflow_markers(text: str) -> dict:
    """job -> the ``-m`` expressions of its pytest steps."""
    doc = yaml.safe_load(text)
    return {job: [e for e in (marker_expression(s.get("run", "")) for s in spec.get("steps", [])) if e]
            for job, spec in doc["jobs"].items()}


def recipe_mismatches(workflow_text: str, readme_text: str) -> list:
    recipes = readme_recipes(readme_text)
    found = workflow_markers(workflow_text)
    problems = []
    for job, row in JOB_RECIPES.items():
        if row not in recipes:
            problems.append(f"README has no CI recipe {row!r}")
            continue
        want = marker_expression(recipes[row])
        got = found.get(job)
        if got != [want]:
            problems.append(f"job {job!r} selects {got}, the README's {row!r} recipe selects -m {want!r}")
    return problems


def test_workflows_lint_clean_with_actionlint():
    r = actionlint(*sorted(CI.glob("*.yml")))
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_catches_an_undefined_matrix_key(tmp_path):
    bad = tmp_path / "w.yml"
    bad.write_text(WORKFLOW.read_text().replace("ARCH: ${{ matrix.arch }}", "ARCH: ${{ matrix.gpu_arch }}"))
    r = actionlint(bad)
    assert r.returncode == 1 and "gpu_arch" in r.stdout, r.stdout + r.stderr


def test_workflows_have_no_zizmor_findings():
    r = zizmor(*sorted(CI.glob("*.yml")))
    assert r.returncode == 0, r.stdout + r.stderr


def test_zizmor_catches_an_input_spliced_into_a_shell(tmp_path):
    """Template injection: the input becomes shell code before the shell runs (why every value
    reaches the scripts through env:)."""
    bad = tmp_path / "w.yml"
    text = WORKFLOW.read_text()
    bad.write_text(text.replace('        run: bash "$HARNESS/scripts/setup.sh"\n',
                                '        run: echo "${{ inputs.mxnet_ref }}" && bash "$HARNESS/scripts/setup.sh"\n', 1))
    assert bad.read_text() != text
    r = zizmor(bad)
    assert r.returncode != 0 and "template-injection" in r.stdout + r.stderr, r.stdout + r.stderr


def test_each_job_selects_the_markers_the_readme_states():
    assert recipe_mismatches(WORKFLOW.read_text(), (ROOT / "README.md").read_text()) == []
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    runs = " ".join(s.get("run", "") for s in jobs["merge"]["steps"])
    assert "-m tools.gpu_verify" in runs  # the README's merge command
    publish_runs = " ".join(s.get("run", "") for s in jobs["publish"]["steps"])
    assert PUBLISH_COMMAND in publish_runs and "pytest" not in publish_runs


def test_recipe_check_catches_a_workflow_that_drifted_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    drifted = WORKFLOW.read_text().replace('-m "gpu or cublas"', '-m "gpu"')
    assert recipe_mismatches(drifted, readme) == [
        "job 'gpu' selects ['gpu'], the README's 'GPU runner' recipe selects -m 'gpu or cublas'"]
