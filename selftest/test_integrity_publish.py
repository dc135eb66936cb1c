"""Issue 11, point 1 (issue 19: the set is the committed manifest): a release is published only
from the flavor's complete gate set.

A run narrowed with -m or -k, however green, verified less than the release promises: the publish
gate refuses it and names the gates that did not run; nothing is tagged, gh is never called.
"""
from __future__ import annotations

import pytest

from selftest.conftest import HARNESS_ROOT, run_gates


# A run narrowed by -m or -k (and by --sw, --lf, --shards, --lanes, --shards-file,
# -o python_functions): selftest/test_release_set.py, every trick ending in the same refusal. With
# real gates that ran and passed (and are therefore not listed): selftest/test_publish_sample_tree.py,
# which builds; since issue 19 an existing --wheel is never published (test_publish_gate.py).


def test_publish_without_the_harness_gate_modules_is_refused(pytester, release_repo):
    # Only the publish gate and one passing gate on the command line: the harness's own gate
    # modules were never collected, and the refusal names every gate of the manifest in them.
    from selftest.fixtures_publish import other_gates_source
    other = pytester.makepyfile(test_other_gates=other_gates_source("passes"))
    result = run_gates(pytester, HARNESS_ROOT / "tests" / "test_publish.py", other,
                       "--mxnet-src", release_repo.repo, "--publish", "--dry-run", timeout=300)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*publish refused:*", "*NOT RUN*tests/test_gpu_smoke.py::test_gpu_visible"])
