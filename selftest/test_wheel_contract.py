"""build_steps.readers.wheel_contract against what this interpreter and pip really do (issue 43):
the extension suffixes it derives for this interpreter's own tag are the ones the import system
uses, a real extension module built by gcc imports under them and not under another Python's, a
declared dependency's scripts are read from its installed entry points, and Requires-Python is
judged as pip judges it (packaging's specifiers)."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import sysconfig

from packaging.requirements import Requirement
from packaging.tags import Tag, interpreter_name, interpreter_version

from build_steps.readers.wheel_contract import (extension_module_problems, extension_suffixes,
                                                requires_python_problems, script_problems)
from selftest.fixtures_wheels import build_extension_module

OWN_TAG = Tag(f"{interpreter_name()}{interpreter_version()}", f"cp{interpreter_version()}",
              f"linux_{sysconfig.get_config_var('MULTIARCH').split('-')[0]}")


def test_suffixes_for_this_interpreters_tag_are_its_import_systems():
    assert extension_suffixes(OWN_TAG) == set(importlib.machinery.EXTENSION_SUFFIXES)
    assert extension_suffixes(Tag(OWN_TAG.interpreter, "abi3", OWN_TAG.platform)) == {".abi3.so", ".so"}


def _imports(path) -> bool:
    finder = importlib.machinery.FileFinder(str(path.parent), (importlib.machinery.ExtensionFileLoader,
                                                               importlib.machinery.EXTENSION_SUFFIXES))
    spec = finder.find_spec("core")
    if spec is None:
        return False
    importlib.util.module_from_spec(spec)
    return True


def test_a_real_extension_imports_exactly_where_the_reader_says(tmp_path):
    own = sysconfig.get_config_var("SOABI")
    minor = sys.version_info.minor
    other = own.replace(f"-3{minor}-", f"-3{minor - 1}-")
    good = build_extension_module(tmp_path / "own", "core", own)
    bad = build_extension_module(tmp_path / "other", "core", other)
    assert _imports(good) and not _imports(bad)
    assert extension_module_problems([str(OWN_TAG)], [f"pkg/{good.name}", "pkg/libmxnet.so", "pkg/lib/libz.so.1"]) == []
    problems = extension_module_problems([str(OWN_TAG)], [f"pkg/{bad.name}"])
    assert len(problems) == 1 and f"pkg/{bad.name}: its suffix .{other}.so is not one" in problems[0], problems


def test_requires_python_judged_as_pip_does():
    assert requires_python_problems(["cp311-cp311-linux_x86_64"], ">=3.10") == []
    assert requires_python_problems(["cp312-cp312-linux_x86_64"], ">=3.12.3,<3.13") == []  # 3.12.3 admitted
    (bad,) = requires_python_problems(["cp312-cp312-linux_x86_64"], ">=3.8,<3.12")
    assert "cp312 is Python 3.12, but Requires-Python '>=3.8,<3.12' excludes it" in bad
    assert requires_python_problems(["py3-none-any"], ">=3.9") == []
    assert requires_python_problems(["py3-none-any"], "<3") != []
    assert "not a valid specifier" in requires_python_problems(["py3-none-any"], ">=three")[0]


def test_scripts_owned_by_the_venv_or_a_declared_dependency(tmp_path):
    dist_info = tmp_path / "mxnet-2.0.0.dist-info"
    dist_info.mkdir()
    (dist_info / "entry_points.txt").write_text(
        "[console_scripts]\npython3.11 = mxnet.x:main\nmxnet-info = mxnet.x:info\n\n[gui_scripts]\nf2py = mxnet.x:f\n")
    problems = script_problems(dist_info, ["cp311-cp311-linux_x86_64"], [Requirement("numpy>=1.17,<2")])
    assert [p.split(":", 1)[0] for p in problems] == ["console_scripts python3.11 = mxnet.x", "gui_scripts f2py = mxnet.x"]
    assert "f2py belongs to numpy, which this wheel declares in Requires-Dist" in problems[1], problems
    # numpy's scripts are numpy's only when the wheel declares numpy
    assert len(script_problems(dist_info, ["cp311-cp311-linux_x86_64"], [])) == 1
