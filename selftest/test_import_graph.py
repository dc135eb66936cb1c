"""The import graph of the harness's own code has no circle and no back-arrow (issue 22).

Every module of build_steps/ (readers included), harness/ and the root conftest.py is parsed with
``ast``; every import counts, at any level, function-local lazy imports included (a lazy import is
an edge the moment the function runs). Only edges between these modules are kept: the standard
library and third-party packages are not the harness's layering.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from selftest.conftest import HARNESS_ROOT

#: The layers, one row each: (who imports, what it must never import, why). Names are dotted
#: module names; a name covers its submodules (``harness`` is every harness.* module).
LAYERS = (
    ("build_steps", "harness", "the steps and readers are plain functions; pytest plugins sit on top of them"),
    ("build_steps", "conftest", "the root conftest registers the plugins; nothing below it imports it"),
    *((module, "build_steps.readers", "profiles are data the readers are judged against, "
                                      "so the readers may read profiles, never the reverse")
      for module in ("build_steps.profile_data", "build_steps.arch",
                     "build_steps.library_policy", "build_steps.versions", "build_steps.cuda_stack")),
)

#: Where the graph's modules live: directory (relative to the harness root) -> package name.
PACKAGES = {"build_steps": "build_steps", "harness": "harness"}
TOP_LEVEL = ("conftest.py",)


def _module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def harness_modules() -> dict:
    """dotted module name -> source file, for every module of the graph."""
    out = {}
    for directory in PACKAGES:
        for path in sorted((HARNESS_ROOT / directory).rglob("*.py")):
            out[_module_name(path.relative_to(HARNESS_ROOT))] = path
    for name in TOP_LEVEL:
        out[_module_name(Path(name))] = HARNESS_ROOT / name
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from <node.module>`` names, as seen from ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict) -> str | None:
    """The graph module that ``name`` is, or lives in (``pkg.mod.attr`` -> ``pkg.mod``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict) -> set:
    """Every graph module ``module`` imports, wherever in the file the import statement is."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node)
            # `from pkg import mod` imports the submodule; `from mod import name` the module itself
            names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names] + [base]
        else:
            continue
        found.update(hit for hit in (_known(n, modules) for n in names) if hit and hit != module)
    return found


def import_graph() -> dict:
    modules = harness_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _covers(prefix: str, module: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def find_cycle(graph: dict) -> list | None:
    """One import circle as a path [a, b, ..., a], or None (iterative DFS, white/grey/black)."""
    state = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if state[start]:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state[child] == 1:
                return path[path.index(child):] + [child]
            elif state[child] == 0:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph[child]))))
    return None


def test_every_module_is_parsed():
    graph = import_graph()
    assert {"conftest", "harness.plugins.wheel_facts", "build_steps.profile_data", "build_steps.readers.elf"} <= set(graph)
    # a lazy import inside a function is an edge too (audit.py reads the fatbin lazily)
    assert "build_steps.readers.fatbin" in graph["build_steps.readers.audit"]


def test_cycle_finder_names_the_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


@pytest.mark.parametrize("importer, forbidden, why", LAYERS, ids=[f"{a}-not-{b}" for a, b, _ in LAYERS])
def test_layering(importer, forbidden, why):
    back = sorted(f"{mod} imports {dep}" for mod, deps in import_graph().items() if _covers(importer, mod)
                  for dep in deps if _covers(forbidden, dep))
    assert not back, f"back-arrow ({why}):\n  " + "\n  ".join(back)


def test_no_module_name_shared_between_packages():
    stems = {package: {path.stem for name, path in harness_modules().items()
                       if _covers(package, name) and path.stem != "__init__"} for package in PACKAGES.values()}
    shared = sorted(set.intersection(*stems.values()))
    assert not shared, f"module names in both {' and '.join(PACKAGES)}/: {', '.join(shared)}"


def harness_plugins() -> list:
    """The harness's plugin modules: the root conftest's pytest_plugins and pytest.ini's -p (read,
    never imported)."""
    tree = ast.parse((HARNESS_ROOT / "conftest.py").read_text())
    listed = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                  and any(getattr(t, "id", None) == "pytest_plugins" for t in node.targets))
    ini = (HARNESS_ROOT / "pytest.ini").read_text()
    early = re.findall(r"-p (harness\.[\w.]+)", ini)
    return list(dict.fromkeys([*early, *listed]))


def test_plugins_never_import_each_other():
    """Issue 35: each plugin is a thin adapter over the run's state (harness.state) and plain
    modules; one plugin importing another is where registration order and hidden coupling creep in."""
    plugins = harness_plugins()
    assert {"harness.plugins.ledger", "harness.plugins.finish", "harness.plugins.cli_options"} <= set(plugins)
    graph = import_graph()
    crossing = sorted(f"{p} imports {dep}" for p in plugins for dep in graph[p] if dep in plugins)
    assert not crossing, "plugin imports plugin:\n  " + "\n  ".join(crossing)


def test_one_sessionfinish_hook():
    """Issue 35: the end of the run is harness.plugins.finish's table; no other harness module has the hook."""
    holders = sorted(name for name, path in harness_modules().items()
                     if name.startswith("harness.") and "pytest_sessionfinish" in path.read_text())
    assert holders == ["harness.plugins.finish"], holders


def entry_point_plugins() -> list:
    """The harness's ``pytest11`` entry points (pyproject.toml), loaded by a pytest without the harness."""
    import tomllib
    project = tomllib.loads((HARNESS_ROOT / "pyproject.toml").read_text())["project"]
    return sorted(project.get("entry-points", {}).get("pytest11", {}).values())


def pytest_hook_names() -> set:
    """Every hook name pytest and pytest-xdist define (their hookspecs)."""
    from _pytest import hookspec
    from xdist import newhooks
    return {name for module in (hookspec, newhooks) for name in dir(module) if name.startswith("pytest_")}


def module_level_hooks(path: Path, hooks: set) -> list:
    """The pytest hooks ``path`` defines at module level (what makes a module a plugin)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in hooks]


def test_plugins_are_the_modules_of_harness_plugins():
    """Issue 47 item 7: the folders show the architecture. Every plugin the run registers (the root
    conftest's list, pytest.ini's -p, the pytest11 entry point) is a module of harness/plugins/,
    each module there is one of them, and no other harness module defines a pytest hook: a reader
    of harness/ tells a plugin from a shared module by where it is."""
    registered = set(harness_plugins()) | set(entry_point_plugins())
    folder = {name for name in harness_modules() if name.startswith("harness.plugins.")}
    assert registered == folder, (f"registered but not in harness/plugins/: {sorted(registered - folder)}; "
                                  f"in harness/plugins/ but never registered: {sorted(folder - registered)}")
    hooks = pytest_hook_names()
    assert {"pytest_configure", "pytest_runtest_logreport", "pytest_testnodedown"} <= hooks
    outside = sorted(f"{name}.{hook}" for name, path in harness_modules().items()
                     if name.startswith("harness.") and not name.startswith("harness.plugins")
                     for hook in module_level_hooks(path, hooks))
    assert not outside, "a pytest hook outside harness/plugins/ (move the module there):\n  " + "\n  ".join(outside)


def test_shared_harness_modules_never_import_a_plugin():
    """harness/ below harness/plugins/: what the plugins share (state, run_record, verdicts, ...)
    and the commands never import a plugin, so a plugin is a leaf a reader can drop or reorder."""
    up = sorted(f"{mod} imports {dep}" for mod, deps in import_graph().items()
                if mod.startswith("harness.") and not _covers("harness.plugins", mod)
                for dep in deps if _covers("harness.plugins", dep))
    assert not up, "a shared harness module imports a plugin:\n  " + "\n  ".join(up)


#: Where the run's plugins, hooks and gates live: the modules the run-record rules below read.
RECORD_DIRS = ("harness", "build_steps", "tests")


def _run_modules() -> dict:
    """dotted name -> path of every module of harness/, build_steps/, tests/ and the root conftest."""
    out = {}
    for directory in RECORD_DIRS:
        for path in sorted((HARNESS_ROOT / directory).rglob("*.py")):
            out[_module_name(path.relative_to(HARNESS_ROOT))] = path
    out["conftest"] = HARNESS_ROOT / "conftest.py"
    return out


def report_listeners(modules: dict) -> list:
    """``module.Class.pytest_runtest_logreport`` (or ``module.pytest_runtest_logreport``) of every
    function or method of that name, found with ``ast``."""
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        owners = {id(f): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                  for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "pytest_runtest_logreport":
                found.append(".".join(filter(None, (name, owners.get(id(node)), node.name))))
    return sorted(found)


def verdict_polls(modules: dict) -> list:
    """``module:line`` of every sleep in a plugin, hook or gate module (harness/, tests/, the root
    conftest), and every file named for verdicts anywhere: a process that waits for verdicts in a
    file it reads again and again. Verdicts reach the reporting process with the reports (pytest-
    xdist's own channel); the steps' process supervision (build_steps/) waits on processes, not
    on verdicts, and keeps its sleeps."""
    found = []
    for name, path in modules.items():
        text = path.read_text()
        waits_on_nothing = not name.startswith("build_steps.")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            called = node.func if isinstance(node, ast.Call) else None
            sleeps = (isinstance(called, ast.Attribute) and called.attr == "sleep") or (
                isinstance(called, ast.Name) and called.id == "sleep")
            named = isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(
                r"verdicts?[\w-]*\.(json|txt|pickle)", node.value)
            if (sleeps and waits_on_nothing) or named:
                found.append(f"{name}:{node.lineno}")
    return found


def test_rule_finders_find_what_they_name(tmp_path):
    mod = tmp_path / "mod.py"
    mod.write_text("import time\nclass P:\n    def pytest_runtest_logreport(self, report):\n        pass\n"
                   "def pytest_runtest_logreport(report):\n    pass\n"
                   "def wait():\n    while True:\n        time.sleep(2)\n        open('x/verdicts.json')\n")
    assert report_listeners({"harness.mod": mod}) == ["harness.mod.P.pytest_runtest_logreport",
                                                      "harness.mod.pytest_runtest_logreport"]
    assert verdict_polls({"harness.mod": mod}) == ["harness.mod:9", "harness.mod:10"]
    assert verdict_polls({"build_steps.mod": mod}) == ["build_steps.mod:10"]


def test_only_the_ledger_listens_to_test_reports():
    """Issue 47: one run record. The ledger (harness.plugins.ledger) is the only listener to test reports;
    each verdict and its facts are filed once, there."""
    assert report_listeners(_run_modules()) == ["harness.plugins.ledger.LedgerPlugin.pytest_runtest_logreport"]


def test_no_file_is_polled_for_verdicts():
    """Issue 47: xdist workers hand verdicts to the controller with their reports; no process
    waits for a file of verdicts (the publish gate polled a controller-written verdicts.json)."""
    assert verdict_polls(_run_modules()) == []
