"""One errors module, one exit status per class, one place per kind of exit (issue 47, item 6).

As cibuildwheel's ``errors.py``: every exception class of the harness's own code is defined in
build_steps/errors.py and carries its ``exit_code``; a pytest run is refused (pytest's usage error,
exit 4) only through ``harness.exits.refuse``; the session's exit status is set only by the end of
the run's table (harness/plugins/finish.py); no module calls ``pytest.exit``; and a command's ``main``
returns a status named in build_steps.errors, never a bare number other than 0.

The rules are read from the source with ``ast`` (every file of build_steps/, harness/, tools/ and
the root conftest.py), so a new class or a new ``raise pytest.UsageError`` anywhere fails here with
its file and line. What is allowed elsewhere is listed below, each with why.
"""
from __future__ import annotations

import ast
import builtins

import pytest

from build_steps import errors
from selftest.conftest import HARNESS_ROOT

#: the harness's own code: where its exception classes and exit statuses live
SCANNED = ("build_steps", "harness", "tools")
TOP_LEVEL = ("conftest.py",)
ERRORS = "build_steps/errors.py"

#: files allowed to make a pytest.UsageError themselves, and why
OWN_USAGE_ERROR = {
    "harness/exits.py": "the one place",
    "harness/plugins/usage_hint.py": "a pytest11 plugin loaded into every pytest of the harness's venv, before "
                             "the command line is parsed and whether or not the harness runs: it imports "
                             "nothing of the harness",
}
#: the one file that sets the session's (and the run's) exit status
SETS_EXIT_STATUS = "harness/plugins/finish.py"
#: (file, function) -> the bare statuses other than 0 it may return, and why
OWN_STATUSES = {
    ("tools/gpu_verify.py", "main"): ({2}, "bad input is exit 2, as argparse's own (README: 'is exit 2 naming it')"),
    ("tools/release_verify.py", "main"): ({2}, "bad input is exit 2, as tools/gpu_verify.py's (README's Releasing section)"),
    ("tools/cuda_stack_args.py", "main"): ({2}, "a wrong argument count is exit 2, as argparse's own"),
    ("tools/annotation_counts.py", "main"): ({2}, "a directory that is not one is exit 2, as argparse's own"),
}


def source_files() -> dict[str, ast.Module]:
    out = {}
    for directory in SCANNED:
        for path in sorted((HARNESS_ROOT / directory).rglob("*.py")):
            rel = path.relative_to(HARNESS_ROOT).as_posix()
            out[rel] = ast.parse(path.read_text(), filename=rel)
    for name in TOP_LEVEL:
        out[name] = ast.parse((HARNESS_ROOT / name).read_text(), filename=name)
    return out


def _base_name(node: ast.expr) -> str:
    return ast.unparse(node).rpartition(".")[2]


def exception_classes(files: dict[str, ast.Module]) -> list[tuple[str, int, str]]:
    """(file, line, class) for every class that derives from an exception, however indirectly:
    a builtin exception, a class of these files that is one, or a third party's ``*Error``."""
    defined: dict[str, list[tuple[str, int, list[str]]]] = {}
    for rel, tree in files.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append((rel, node.lineno, [_base_name(b) for b in node.bases]))

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return True
        if name in seen:
            return False
        if name not in defined:
            return name.endswith(("Error", "Exception", "Interrupt", "Exit"))
        return any(is_exception(b, seen | {name}) for _r, _l, bases in defined[name] for b in bases)

    return sorted((rel, line, name) for name, places in defined.items() for rel, line, bases in places
                  if any(is_exception(b) for b in bases))


def _calls(tree: ast.Module, dotted: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == dotted:
            yield node


# --------------------------------------------------------------------------------------------
# The rule's own parts: they find what they must (else every rule below holds vacuously)
# --------------------------------------------------------------------------------------------
def test_scan_finds_classes_and_sites():
    tree = ast.parse("import pytest\nclass A(ValueError): pass\nclass B(A): pass\nclass C(B, object): pass\n"
                     "class D: pass\nclass E(elftools.ELFError): pass\n"
                     "def f():\n    raise pytest.UsageError('x')\n")
    assert [name for _f, _l, name in exception_classes({"x.py": tree})] == ["A", "B", "C", "E"]
    assert len(list(_calls(tree, "pytest.UsageError"))) == 1
    # the real tree: the base of them all is found where it is defined
    assert (ERRORS, "HarnessError") in {(f, name) for f, _l, name in exception_classes(source_files())}


# --------------------------------------------------------------------------------------------
# One module
# --------------------------------------------------------------------------------------------
def test_every_exception_class_is_defined_in_errors():
    elsewhere = [f"{rel}:{line}: class {name}" for rel, line, name in exception_classes(source_files())
                 if rel != ERRORS]
    assert not elsewhere, ("exception classes outside build_steps/errors.py (define them there, with their "
                           "exit_code, and import them where they are raised):\n  " + "\n  ".join(elsewhere))


def _error_classes() -> list[type[BaseException]]:
    return [c for c in vars(errors).values()
            if isinstance(c, type) and issubclass(c, BaseException) and c.__module__ == errors.__name__]


def test_statuses_are_pytests_numbers():
    assert (errors.FAIL, errors.INTERRUPTED, errors.NOT_JUDGED_EXIT, errors.REFUSED) == (1, 2, 3, 4)
    assert errors.FAIL == pytest.ExitCode.TESTS_FAILED
    assert errors.INTERRUPTED == pytest.ExitCode.INTERRUPTED
    assert errors.REFUSED == pytest.ExitCode.USAGE_ERROR
    from harness.verdicts import NOT_JUDGED_EXIT
    assert NOT_JUDGED_EXIT is errors.NOT_JUDGED_EXIT  # one definition, re-exported


def test_every_class_carries_its_exit_code():
    classes = _error_classes()
    assert len(classes) >= 30, [c.__name__ for c in classes]
    wrong = []
    for cls in classes:
        # the README's exit codes: refused (bad input) 4, not judged (the host's fault) 3,
        # interrupted 2, anything else the harness explains 1
        want = (errors.REFUSED if issubclass(cls, errors.UsageError) else
                errors.NOT_JUDGED_EXIT if issubclass(cls, errors.NotJudged) else
                errors.INTERRUPTED if issubclass(cls, KeyboardInterrupt) else errors.FAIL)
        got = getattr(cls, "exit_code", None)
        if got != want:
            wrong.append(f"{cls.__name__}: exit_code {got}, want {want}")
    assert not wrong, "\n".join(wrong)


def test_exit_status_of_real_errors():
    assert errors.exit_status(errors.PublishRefused("dirty tree")) == 4
    assert errors.exit_status(errors.EnvironmentFault("venv", "index unreachable")) == 3
    assert errors.exit_status(errors.NotJudgedElsewhere("x")) == 3
    assert errors.exit_status(errors.NotReady("offline")) == 3
    assert errors.exit_status(errors.StepError("compile", "failed")) == 1
    assert errors.exit_status(errors.BuildInterrupted("compile", "SIGINT")) == 2
    # what the harness did not name is a failure, never a refusal or "not judged"
    assert errors.exit_status(ValueError("a bug")) == 1


# --------------------------------------------------------------------------------------------
# One place per exit
# --------------------------------------------------------------------------------------------
def test_only_the_one_place_makes_pytest_usage_errors():
    found = [f"{rel}:{node.lineno}" for rel, tree in source_files().items() if rel not in OWN_USAGE_ERROR
             for node in _calls(tree, "pytest.UsageError")]
    assert not found, ("pytest.UsageError made outside harness/exits.py (call harness.exits.refuse):\n  "
                       + "\n  ".join(found))


def test_nothing_calls_pytest_exit():
    files = source_files()
    for path in sorted((HARNESS_ROOT / "tests").rglob("*.py")):
        rel = path.relative_to(HARNESS_ROOT).as_posix()
        files[rel] = ast.parse(path.read_text(), filename=rel)
    found = [f"{rel}:{node.lineno}" for rel, tree in files.items() for node in _calls(tree, "pytest.exit")]
    assert not found, "pytest.exit (the run's status is the FINISH table's, harness/plugins/finish.py):\n  " + "\n  ".join(found)


def test_only_finish_sets_the_exit_status():
    found = []
    for rel, tree in source_files().items():
        for node in ast.walk(tree):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            found += [f"{rel}:{node.lineno}: {ast.unparse(t)}" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr == "exitstatus" and rel != SETS_EXIT_STATUS]
    assert not found, ("an exit status set outside harness/plugins/finish.py (add a FINISH row that returns it):\n  "
                       + "\n  ".join(found))


def _bare_statuses(node: ast.expr) -> set[int]:
    """The int literals other than 0 that ``node`` can evaluate to (``0 if ok else 1`` gives {1});
    a literal inside a call's arguments or a comparison is not a status."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {node.value} - {0}
    if isinstance(node, ast.IfExp):
        return _bare_statuses(node.body) | _bare_statuses(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_bare_statuses(v) for v in node.values))
    return set()


def test_commands_return_named_statuses():
    found = []
    for rel, tree in source_files().items():
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef) or not (func.name == "main" or func.name.endswith("_main")):
                continue
            allowed = OWN_STATUSES.get((rel, func.name), (set(), ""))[0]
            for node in ast.walk(func):
                if isinstance(node, ast.Return) and node.value is not None:
                    bare = _bare_statuses(node.value) - allowed
                    if bare:
                        found.append(f"{rel}:{node.lineno}: {func.name} returns {sorted(bare)}")
        # sys.exit(N) / SystemExit(N) with a bare number anywhere (a message is exit 1, and says why)
        for dotted in ("sys.exit", "SystemExit", "exit"):
            for call in _calls(tree, dotted):
                bare = set().union(*(_bare_statuses(a) for a in call.args)) if call.args else set()
                if bare:
                    found.append(f"{rel}:{call.lineno}: {dotted}({sorted(bare)})")
    assert not found, ("bare exit statuses (return build_steps.errors.FAIL, REFUSED, NOT_JUDGED_EXIT, an "
                       "error's exit_code or exit_status(exc)):\n  " + "\n  ".join(found))
