"""The README's first two commands stay true: CI runs the test command it gives, and the main-job
command (through mxnet-release, which works from any directory) names a tree, markers and options
this harness has."""
from __future__ import annotations

import re
import shlex

from selftest.conftest import HARNESS_ROOT


def readme_commands() -> list:
    """The indented command lines before the README's first horizontal rule, in order."""
    head = (HARNESS_ROOT / "README.md").read_text().split("\n---\n", 1)[0]
    return [ln.strip() for ln in head.splitlines() if ln.startswith("    ") and ln.strip()]


def test_readme_gives_two_commands_setup_and_main_job_then_tests():
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    main, tests = cmds
    assert main.startswith("scripts/setup.sh && .venv/bin/mxnet-release "), main
    assert tests.startswith(".venv/bin/python -m pytest "), tests


def test_ci_runs_the_readme_test_command():
    _, tests = readme_commands()
    ci = (HARNESS_ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in [ln.strip() for ln in ci], f".ci/run does not run the README's test command: {tests}"


def test_main_job_names_a_real_tree_and_known_markers():
    main, _ = readme_commands()
    args = shlex.split(main.split("&&", 1)[1])
    src = next(a.split("=", 1)[1] for a in args if a.startswith("--mxnet-src="))
    assert (HARNESS_ROOT / src / "CMakeLists.txt").is_file() and (HARNESS_ROOT / src / "python" / "setup.py").is_file()
    markexpr = args[args.index("-m", args.index(".venv/bin/mxnet-release")) + 1]
    registered = set(re.findall(r"^    (\w+):", (HARNESS_ROOT / "pytest.ini").read_text(), re.M))
    used = set(re.findall(r"\w+", markexpr)) - {"and", "or", "not"}
    assert used <= registered, f"unregistered markers in the README command: {used - registered}"
