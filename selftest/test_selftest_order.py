"""The selftests' own order under xdist (selftest/conftest.py, order_chains): the real fork wheel's
chain first, the built-OpenCV chain late (after the background OpenCV build had time) but not last,
every other selftest in its own order. Checked on this very collection, as the run sorts it."""
from __future__ import annotations

import subprocess
import sys

from selftest.conftest import BUILT_OPENCV_AT, HARNESS_ROOT


#: the selftests of selftest/test_opencv_build.py that take the minimal_opencv fixture
BUILT_CHAIN = {
    "test_the_built_opencv_needs_only_the_c_and_cxx_runtime", "test_a_second_build_reuses_the_cache_entry",
    "test_the_bundled_closure_is_three_libraries_within_the_budget", "test_the_forks_libmxnet_bundles_the_built_opencv",
    "test_the_forks_wheel_with_the_built_opencv_passes_the_runtime_gates",
    "test_the_forks_own_opencv_regression_test_passes_with_the_built_opencv",
    "test_the_forks_wheel_with_the_built_opencv_ships_its_gfortran",
    "test_every_fork_source_that_includes_opencv_compiles_against_the_built_opencv",
    "test_sample_tree_built_with_opencv_built_bundles_it_and_round_trips"}


def _collected() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "selftest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                         cwd=HARNESS_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_the_long_chains_are_where_they_overlap_best():
    ids = _collected()
    fork = [i for i, n in enumerate(ids) if n.startswith("selftest/test_realfork_wheel.py::test_the_forks_")]
    built = [i for i, n in enumerate(ids) if n.startswith("selftest/test_opencv_build.py::")
             and n.split("::")[1] in BUILT_CHAIN]
    assert fork and len(built) == len(BUILT_CHAIN), "the chains' selftests were not found by name"
    assert fork == list(range(len(fork))), "the fork wheel's chain does not open the collection"
    # late, contiguous (one worker's run of the collection), and with other selftests after it
    assert built == list(range(built[0], built[0] + len(built))), [ids[i] for i in built]
    rest = len(ids) - len(fork) - len(built)
    assert built[0] == len(fork) + int(rest * BUILT_OPENCV_AT), (built[0], len(ids))
    assert built[-1] < len(ids) - 50, "the built-OpenCV chain must not close the run: the other worker idles"
    # the rest keeps its file order: each module's selftests in one run, modules in the usual order
    others = [n for i, n in enumerate(ids) if i not in set(fork) | set(built)]
    modules = [n.split("::")[0] for n in others]
    firsts = list(dict.fromkeys(modules))
    assert firsts == sorted(firsts), "the other selftests left their file order"
