"""The fork's wheel acceptance suite: its shards, which of them apply, how one runs, and what its
log says. One module per concern:

- ``acceptance_suite``: the shard data file (``acceptance_shards.toml``) read and checked; whether
  a shard applies to a tree;
- ``acceptance_fork_script``: the fork's ``tools/run_wheel_full_test.sh`` read again, and how the
  data file disagrees with it;
- ``acceptance_selection``: --shards, --lanes, --shard-workers and --shard-split;
- ``acceptance_venv``: the suite's test requirements, the shards' environment and sandbox, the
  check that ``import mxnet`` is the installed wheel;
- ``acceptance_run``: one shard run (its log, junit XML, timeout) into a ``ShardResult``;
- ``acceptance_verdict``: a shard's log and junit XML into PASS / FAIL / ERROR / NO_TESTS /
  INCOMPLETE;
- ``acceptance_report``: the terminal table and ``summary.md``.
"""
from __future__ import annotations

# The names harness/plugins/acceptance_shards.py, build_steps/option_table.py and harness/release_set.py import
# from this module, kept here while those plugins are rewritten; new code imports the concern's
# own module (above). Drop this block once no harness module names build_steps.acceptance.
from .acceptance_report import summary_markdown, table_lines  # noqa: F401
from .acceptance_selection import parse_id_list, parse_parallel, parse_shard_split, select  # noqa: F401
from .acceptance_suite import LANES, load_suite, not_applicable  # noqa: F401
from .acceptance_venv import install_test_requirements, verify_installed_mxnet  # noqa: F401

__all__ = ["LANES", "install_test_requirements", "load_suite", "not_applicable", "parse_id_list", "parse_parallel",
           "parse_shard_split", "select", "summary_markdown", "table_lines", "verify_installed_mxnet"]
