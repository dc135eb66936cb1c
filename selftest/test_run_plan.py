"""The run plan is settled once (issue 47 item 2): whether the run is a release run, the MXNet tree,
the build paths and the compiler launcher are computed by build_steps.run_plan when the options are
made, and every plugin, step and gate reads them from the plan (HarnessRun.plan)."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from build_steps.errors import UsageError
from build_steps.options import make_options
from build_steps.run_plan import BuildPaths, make_plan, release_requested, selects_release
from selftest.fixtures_wheels import wheel_name, write_wheel
from selftest.test_import_graph import _run_modules

#: The one module that may compute what the plan settles.
PLAN_MODULE = "build_steps.run_plan"


def settled_elsewhere(modules: dict) -> list:
    """``module:line what`` of every place outside the plan that computes what the plan settles: a
    call of resolve_source, BuildPaths or launcher.choose, or a regex over ``-m`` for the release
    or build marks (a string holding ``\\brelease\\b`` or ``\\bbuild\\b``)."""
    found = []
    for name, path in modules.items():
        if name == PLAN_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            what = None
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("resolve_source", "BuildPaths"):
                    what = called
                elif called == "choose" and (not isinstance(func, ast.Attribute)
                                             or getattr(func.value, "id", "") == "launcher"):
                    what = "launcher.choose"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    "\\brelease\\b" in node.value or "\\bbuild\\b" in node.value):
                what = f"regex {node.value!r}"
            if what:
                found.append(f"{name}:{node.lineno} {what}")
    return sorted(found)


def test_rule_finds_each_kind(tmp_path):
    mod = tmp_path / "mod.py"
    mod.write_text("import re\nfrom build_steps import launcher, source\n"
                   "root = source.resolve_source(None)\npaths = BuildPaths(o, root)\n"
                   "tool = launcher.choose('auto')\nrel = re.search(r'\\brelease\\b', m)\n"
                   "other = shelf.choose(1)\n")
    assert settled_elsewhere({"harness.mod": mod}) == [
        "harness.mod:3 resolve_source", "harness.mod:4 BuildPaths", "harness.mod:5 launcher.choose",
        "harness.mod:6 regex '\\\\brelease\\\\b'"]
    assert settled_elsewhere({PLAN_MODULE: mod}) == []


def test_nothing_settled_outside_the_plan():
    assert settled_elsewhere(_run_modules()) == []


def test_the_plan_is_made_in_one_place():
    """harness.state.plan_of, with the options (pytest_configure, and a publish run's fixed options)."""
    makers = sorted(f"{name}:{node.lineno}" for name, path in _run_modules().items()
                    for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", "")) == "make_plan")
    assert [m.split(":")[0] for m in makers] == ["harness.state"], makers


def _tree(root: Path) -> Path:
    (root / "python").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text("project(mxnet)\n")
    (root / "python" / "setup.py").write_text("")
    return root


def _options(**raw):
    return make_options({"flavor": "cpu", **raw})


@pytest.mark.parametrize("markexpr, release", [
    ("", False), ("release", True), ("release and not gpu", True), ("not release", False),
    ("build or release", True), ("releases", False), ("gpu", False)])
def test_release_selection(markexpr, release):
    assert selects_release(markexpr) is release
    assert release_requested(markexpr) is release
    assert release_requested(markexpr, publish=True) and release_requested(markexpr, release_report="r")


def test_plan_of_a_build(tmp_path):
    src = _tree(tmp_path / "mxnet")
    plan = make_plan(_options(mxnet_src=str(src), compiler_launcher="none"), "release", tmp_path)
    assert plan.release and plan.selects_build
    assert plan.tree() == src.resolve()
    assert plan.paths == BuildPaths(_options(), src.resolve())
    assert plan.build_paths().build_dir == tmp_path / "mxnet-build-cpu"
    assert plan.build_paths().dist == src.resolve() / "dist"
    assert plan.compiler_launcher().name == "none"
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.release = False  # type: ignore[misc]


def test_plan_of_the_cwd_and_of_no_tree(tmp_path):
    src = _tree(tmp_path / "mxnet")
    assert make_plan(_options(), "", src).tree() == src.resolve()
    plan = make_plan(_options(), "gpu", tmp_path)
    assert plan.source is None and plan.paths is None and not plan.selects_build and not plan.release
    with pytest.raises(UsageError, match="is not an MXNet source tree"):
        plan.tree()
    with pytest.raises(UsageError, match="is not an MXNet source tree"):
        plan.build_paths()


def test_plan_of_an_audit_names_its_tree_but_no_build(tmp_path):
    src = _tree(tmp_path / "mxnet")
    wheel = write_wheel(tmp_path / "dist" / wheel_name("2.0.0"), {"mxnet/__init__.py": b""}, version="2.0.0")
    plan = make_plan(_options(wheel=str(wheel), mxnet_src=str(src)), "release", tmp_path)
    assert plan.source == src.resolve() and plan.paths is None


def test_a_missing_launcher_is_said_where_it_is_used(tmp_path, monkeypatch):
    src = _tree(tmp_path / "mxnet")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    plan = make_plan(_options(mxnet_src=str(src), compiler_launcher="ccache"), "release", tmp_path)
    with pytest.raises(UsageError, match="ccache is not installed"):
        plan.compiler_launcher()
