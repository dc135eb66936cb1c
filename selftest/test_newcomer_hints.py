"""The newcomer's two silent traps say so in one line (issue 36): pytest run outside the harness
with the harness's options, and the selftests of the real fork tree skipped for want of its archive."""
from __future__ import annotations

import os
import subprocess
import sys

from selftest.conftest import HARNESS_ROOT


def test_harness_option_outside_the_harness_names_mxnet_release(tmp_path):
    """From another directory pytest loads no harness conftest: instead of pytest's bare
    `unrecognized arguments: --mxnet-src`, one line names mxnet-release (harness.plugins.usage_hint)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "release",
                        f"--mxnet-src={HARNESS_ROOT / 'selftest' / 'sample_mxnet'}"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 4, r.stdout + r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "run `mxnet-release " in errors[0] and "-m release --mxnet-src=" in errors[0], r.stderr
    assert "unrecognized arguments" not in r.stderr


def test_an_unknown_option_of_no_harness_is_left_to_pytest(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--no-such-option"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 4 and "unrecognized arguments: --no-such-option" in r.stderr, r.stderr
    assert "mxnet-release" not in r.stderr


def test_a_missing_fork_fixture_is_one_line_in_the_summary(pytester):
    """selftest/conftest.py's summary line, on a run whose fork-tree selftests skip as
    selftest.fixtures_realtree.fork_pristine does when neither the archive nor $MXNET_FORK_TREE exists."""
    pytester.makeconftest("from selftest.conftest import pytest_terminal_summary  # noqa: F401\n")
    pytester.makepyfile(test_fork="""
        import pytest

        @pytest.mark.parametrize("n", range(3))
        def test_needs_the_fork(n):
            pytest.skip("no real fork tree: neither .../mxnet-fork-*.tar.xz nor $MXNET_FORK_TREE exists")

        def test_other():
            pytest.skip("something else")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HARNESS_ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q"],
                       cwd=pytester.path, env=env, capture_output=True, text=True, timeout=120)
    notes = [ln for ln in r.stdout.splitlines() if ln.startswith("NOTE:")]
    assert notes == [notes[0]] and "3 selftests of the real fork tree skipped" in notes[0], r.stdout
    assert "MXNET_FORK_TREE=" in notes[0]
