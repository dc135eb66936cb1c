"""Issue 40, defect 4: staging follows the tree's symlinks, inside the tree only.

The fork's ``python/mxnet/space.py`` is a relative symlink (``../../contrib/tvmop/space.py``). Copied as
a link into ``<build>/harness-package`` it dangled, and the package step failed with
``error: can't copy 'mxnet/space.py': doesn't exist or not a regular file``. A link is the tree's
(untrusted) data: one that resolves inside the source tree is followed (its content staged), one
that leaves the tree (``/etc/shadow``, ``~/.netrc``) is refused with one line, never copied.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from build_steps import package
from build_steps.bundle import stage_headers
from build_steps.errors import StepError
from build_steps.profile_data import PROFILES


def _stand_in_library(path):
    # A real shared library where the chain stages libmxnet.so: the package step only copies it.
    d = path.parent
    (d / "stand_in.c").write_text("int mxnet_stand_in(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(d / "stand_in.c")], check=True)
    (d / "stand_in.c").unlink()


@pytest.mark.slow
def test_the_real_forks_python_tree_stages_and_packages(fork_pristine, tmp_path):
    link = fork_pristine / "python" / "mxnet" / "space.py"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link)), "the fixture's relative link"
    staged = package.stage_tree(fork_pristine, tmp_path / "harness-package")
    lib = staged / "python" / "mxnet" / "libmxnet.so"
    _stand_in_library(lib)
    result = package.build_wheel(staged, "2.0.0", PROFILES["cpu"], tmp_path / "staging", tmp_path / "logs",
                                 sys.executable)
    with zipfile.ZipFile(result.wheel) as zf:
        space = zf.read("mxnet/space.py")
    assert space == (fork_pristine / "contrib" / "tvmop" / "space.py").read_bytes()
    assert not (staged / "python" / "mxnet" / "space.py").is_symlink()
    assert (fork_pristine / "python" / "mxnet" / "space.py").is_symlink(), "the source tree is only read"


def _tree(tmp_path):
    tree = tmp_path / "tree"
    (tree / "python" / "mxnet").mkdir(parents=True)
    (tree / "python" / "mxnet" / "__init__.py").write_text("")
    (tree / "contrib").mkdir()
    (tree / "contrib" / "inside.py").write_text("INSIDE = 1\n")
    return tree


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../outside.txt", "/etc"])
def test_a_link_out_of_the_tree_is_refused(tmp_path, target):
    tree = _tree(tmp_path)
    (tmp_path / "outside.txt").write_text("a secret beside the tree\n")
    (tree / "python" / "mxnet" / "leak").symlink_to(target)
    dest = tmp_path / "build" / "harness-package"
    with pytest.raises(StepError) as err:
        package.stage_tree(tree, dest)
    message = str(err.value)
    assert "\n" not in message
    assert "python/mxnet/leak" in message and "outside the source tree" in message
    staged = dest / "python" / "mxnet"
    assert not (staged / "leak").exists() and not (staged / "leak").is_symlink()


def test_a_link_inside_the_tree_is_followed(tmp_path):
    tree = _tree(tmp_path)
    (tree / "python" / "mxnet" / "space.py").symlink_to("../../contrib/inside.py")
    (tree / "python" / "mxnet" / "contrib").symlink_to("../../contrib")
    staged = package.stage_tree(tree, tmp_path / "harness-package") / "python" / "mxnet"
    assert not (staged / "space.py").is_symlink() and (staged / "space.py").read_text() == "INSIDE = 1\n"
    assert not (staged / "contrib").is_symlink() and (staged / "contrib" / "inside.py").is_file()


def test_a_link_within_a_followed_directory_is_checked_too(tmp_path):
    tree = _tree(tmp_path)
    (tree / "contrib" / "leak").symlink_to("/etc/passwd")
    (tree / "python" / "mxnet" / "contrib").symlink_to("../../contrib")
    with pytest.raises(StepError, match="outside the source tree"):
        package.stage_tree(tree, tmp_path / "harness-package")


def test_a_dangling_link_and_a_loop_are_refused(tmp_path):
    tree = _tree(tmp_path)
    (tree / "python" / "mxnet" / "gone.py").symlink_to("../../contrib/gone.py")
    with pytest.raises(StepError, match="gone.py.*does not exist"):
        package.stage_tree(tree, tmp_path / "one")
    (tree / "python" / "mxnet" / "gone.py").unlink()
    (tree / "python" / "mxnet" / "again").symlink_to("..")
    with pytest.raises(StepError, match="again.*loop"):
        package.stage_tree(tree, tmp_path / "two")


def test_header_staging_refuses_a_link_out_of_the_tree(tmp_path):
    tree = _tree(tmp_path)
    (tree / "include" / "mxnet").mkdir(parents=True)
    (tree / "include" / "mxnet" / "base.h").write_text("#pragma once\n")
    (tree / "include" / "mxnet" / "shadow.h").symlink_to("/etc/passwd")
    with pytest.raises(StepError, match="include/mxnet/shadow.h.*outside the source tree"):
        stage_headers(tree, tree / "python" / "mxnet")
    assert not (tree / "python" / "mxnet" / "include" / "mxnet" / "shadow.h").exists()
    shutil.rmtree(tree / "python" / "mxnet" / "include", ignore_errors=True)


def test_headers_of_a_staged_tree_follow_links_into_its_source_tree(tmp_path):
    tree = _tree(tmp_path)
    (tree / "3rdparty" / "nnvm" / "include" / "nnvm").mkdir(parents=True)
    (tree / "3rdparty" / "nnvm" / "include" / "nnvm" / "graph.h").write_text("#pragma once\n")
    (tree / "include" / "mxnet").mkdir(parents=True)
    (tree / "include" / "mxnet" / "base.h").write_text("#pragma once\n")
    (tree / "include" / "nnvm").symlink_to("../3rdparty/nnvm/include/nnvm")
    staged = package.stage_tree(tree, tmp_path / "build" / "harness-package")
    with pytest.raises(StepError, match="outside the source tree"):
        stage_headers(staged, staged / "python" / "mxnet")  # the staged tree alone does not hold 3rdparty/
    headers, _ = stage_headers(staged, staged / "python" / "mxnet", tree)
    assert {"mxnet", "nnvm"} <= set(headers)
    assert (staged / "python" / "mxnet" / "include" / "nnvm" / "graph.h").is_file()


def test_a_tree_whose_include_dir_leaves_it_is_refused(tmp_path):
    tree = _tree(tmp_path)
    (tmp_path / "elsewhere" / "mxnet").mkdir(parents=True)
    (tmp_path / "elsewhere" / "mxnet" / "base.h").write_text("#pragma once\n")
    (tree / "include").symlink_to(tmp_path / "elsewhere")
    staged = package.stage_tree(tree, tmp_path / "build" / "harness-package")
    with pytest.raises(StepError, match="include/mxnet resolves to .*outside the source tree"):
        stage_headers(staged, staged / "python" / "mxnet", tree)
