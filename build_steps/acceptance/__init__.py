"""The fork's wheel acceptance suite: its shards, which of them apply, how one runs, and what its
log says. One module per concern (import the concern's module; this package re-exports nothing):

- ``suite``: the shard data file (``shards.toml`` beside it) read and checked; whether a shard
  applies to a tree;
- ``fork_script``: the fork's ``tools/run_wheel_full_test.sh`` read again, and how the data file
  disagrees with it;
- ``selection``: --shards, --lanes, --shard-workers and --shard-split;
- ``venv``: the suite's test requirements, the shards' environment and sandbox, the check that
  ``import mxnet`` is the installed wheel;
- ``run``: one shard run (its log, junit XML, timeout) into a ``ShardResult``;
- ``verdict``: a shard's log and junit XML into PASS / FAIL / ERROR / NO_TESTS / INCOMPLETE;
- ``summary``: the terminal table and ``summary.md`` as the fork writes them;
- ``table``: the end of the run's shard table (a row for every requested shard), written to
  ``summary.json`` and ``summary.md``;
- ``shard_part/``: the pytest plugin loaded into a shard's own pytest for ``--shard-split``.
"""
