"""Copy a part of the source tree into a staging dir, following its symlinks, inside the tree only.

The fork links files across its own tree (``python/mxnet/space.py -> ../../contrib/tvmop/space.py``,
``include/mxnet`` headers into ``3rdparty/``); a staged copy of the link dangles (issue 40, defect
4), so staging copies what a link points to. But a link is the tree's data, written by whoever
wrote the tree: one that resolves outside the tree (``/etc/shadow``, ``~/.netrc``) would copy a file
of the build host into the wheel. Every link is checked before anything is copied: it must resolve,
inside ``tree``, and a link to a directory must not point at one of its own ancestors (a copy that
never ends). The first one that fails is the one-line error; nothing is staged then.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .errors import StepError


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _relative(entry: Path, tree: Path) -> str:
    try:
        return str(entry.relative_to(tree))
    except ValueError:
        return str(entry)


def check_links(top: Path, tree: Path, step: str,
                ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """Raise StepError(step) naming the first symlink at or under ``top`` (followed the way a copy
    that dereferences follows it) that dangles, leaves ``tree`` or loops."""
    top, tree = Path(top), Path(tree)
    root = os.path.realpath(tree)
    first = _checked(str(top), top, tree, root, step)
    if not _inside(os.path.realpath(first), root):  # a link above ``top`` (include -> /etc)
        raise StepError(step, f"{top} resolves to {os.path.realpath(first)}, outside the source tree {root}: "
                        "refused (a link in the tree may only point inside it)")
    pending = [(top, first)]
    while pending:
        shown, real = pending.pop()
        if not os.path.isdir(real):
            continue
        names = sorted(os.listdir(real))
        skipped = ignore(real, names) if ignore else set()
        for name in names:
            if name not in skipped:
                entry = shown / name
                pending.append((entry, _checked(os.path.join(real, name), entry, tree, root, step)))


def _checked(where: str, shown: Path, tree: Path, root: str, step: str) -> str:
    """The real path of ``where`` (named ``shown`` in messages). A symlink is refused unless it
    resolves, inside ``root``, and not to a directory that holds the link itself."""
    if not os.path.islink(where):
        return where
    rel, link = _relative(shown, tree), os.readlink(where)
    target = os.path.realpath(where)
    if not _inside(target, root):
        raise StepError(step, f"{rel} is a symlink to {link}, which resolves to {target}, outside the source "
                        f"tree {root}: refused (a link in the tree may only point inside it)")
    if not os.path.exists(target):
        raise StepError(step, f"{rel} is a symlink to {link}, which does not exist in the source tree: "
                        "refused (the staged copy would dangle)")
    if os.path.isdir(target) and _inside(os.path.realpath(os.path.dirname(where)), target):
        raise StepError(step, f"{rel} is a symlink to {link}, a directory that holds the link itself: "
                        "refused (a loop; copying it never ends)")
    return target


def copy_following_links(src: Path, dest: Path, tree: Path, step: str,
                         ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """``shutil.copytree(src, dest)`` with every link dereferenced, after check_links passed."""
    check_links(Path(src), Path(tree), step, ignore)
    shutil.copytree(src, dest, symlinks=False, ignore=ignore)
