"""``mxnet-release``: run the harness with its own configuration, from any directory.

Plain ``pytest`` reads the first pytest.ini it finds above the current directory. Inside an
MXNet tree that is the fork's own (its markers, its conftest.py, no harness options), so
``pytest -m release --mxnet-src=.`` run there rejects ``--mxnet-src``. This entry point always
passes the harness's ini, rootdir and tests/ to pytest and leaves the rest of the command line
as the user wrote it. In an MXNet tree with neither ``--mxnet-src`` nor ``--wheel`` given, that
tree is the one built.

``mxnet-release publish --report=R --yes`` is the privileged step after a verify run
(build_steps.publish_step): no pytest, no code of the tree or the wheel, the token used last.

``mxnet-release rebuild-check --wheel=W --mxnet-src=TREE`` is a command of its own
(build_steps.rebuild_check): it rebuilds the commit W names and compares the bytes.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from build_steps.errors import REFUSED
from build_steps.source import is_mxnet_tree

HARNESS_ROOT = Path(__file__).resolve().parent.parent


def _given(args: list[str], option: str) -> bool:
    return any(a == option or a.startswith(option + "=") for a in args)


def pytest_args(args: list[str], cwd: Path | None = None, root: Path = HARNESS_ROOT) -> list[str]:
    """The pytest command line for ``mxnet-release ARGS`` run in ``cwd``."""
    cwd = Path(cwd or Path.cwd())
    out, chose_tests = [], False
    for a in args:
        # Test paths name the harness's gates (tests/…), not the cwd's: the fork has a tests/ too.
        if a == "tests" or a.startswith(("tests/", "tests::")):
            out.append(str(root / a))
            chose_tests = True
        else:
            out.append(a)
    if not _given(args, "--mxnet-src") and not _given(args, "--wheel") and is_mxnet_tree(cwd):
        out.append(f"--mxnet-src={cwd.resolve()}")
    if not chose_tests:
        out.append(str(root / "tests"))
    return ["-c", str(root / "pytest.ini"), "--rootdir", str(root), *out]


def main(argv: list[str] | None = None) -> int:
    root = HARNESS_ROOT
    missing = [p for p in ("pytest.ini", "conftest.py", "tests") if not (root / p).exists()]
    if missing:
        print(f"mxnet-release: {root} has no {', '.join(missing)}: the harness must be installed from "
              "its checkout (`pip install -e <harness checkout>`, as scripts/setup.sh does)", file=sys.stderr)
        return REFUSED
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["publish"]:  # no pytest, no code of the tree or the wheel (build_steps.publish_step)
        from build_steps import publish_step
        return publish_step.main(args[1:])
    if args[:1] == ["rebuild-check"]:  # a command of its own, not a pytest run (build_steps.rebuild_check)
        from build_steps import rebuild_check
        return rebuild_check.main(args[1:])
    # The fork's conftest.py in the cwd is never imported: pytest loads conftests along the
    # rootdir and the test paths only (a selftest runs this inside the real fork tree).
    return int(pytest.main(pytest_args(args)))


if __name__ == "__main__":
    sys.exit(main())
