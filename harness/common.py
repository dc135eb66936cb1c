"""What every plugin of the harness shares: the run's options, where xdist workers meet, extra
report lines and live progress past pytest's capture."""
from __future__ import annotations

import fcntl
import getpass
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from build_steps.options import RunOptions

class HarnessRun:
    """The run's common state, made once in pytest_configure (the root conftest) and handed to every
    plugin through ``harness_run(config)``, as pytest's own ``config.cache``: the options, the
    plugin modules the conftest registers, the run's dir, and what the end of the run prints."""

    def __init__(self, options: RunOptions, plugins: tuple, run_dir: "RunDir"):
        self.options = options
        #: the plugin modules the root conftest registers (conftest.py's pytest_plugins)
        self.plugins = plugins
        self.dir = run_dir
        #: nodeid -> (verdict, why) of every gate, for the gate table (filed by harness.ledger)
        self.results: dict = {}
        #: extra lines for the end of the terminal summary
        self.report_lines: list = []
        self.release_fixed = False


_RUN_KEY = pytest.StashKey[HarnessRun]()


def start_run(config, options: RunOptions, plugins: tuple, run_dir: "RunDir") -> HarnessRun:
    """The run's state, once per process (pytest_configure)."""
    run = HarnessRun(options, tuple(plugins), run_dir)
    config.stash[_RUN_KEY] = run
    return run


def start_sandbox(config, options: RunOptions, run_dir: Path) -> None:
    """Once per process: the sandbox on (or off under --no-sandbox) with the run dir hidden from it;
    a host where none can be made refuses the run (exit 4) unless --no-sandbox was given, and a
    --no-sandbox run says so once."""
    from build_steps import sandbox
    sandbox.configure(enabled=not options.no_sandbox, hidden=[run_dir])
    if is_worker(config):
        return
    if options.no_sandbox:
        why = sandbox.probe() or "a sandbox could be made here"
        say(f"WARNING: --no-sandbox: the tree's build and the wheel's code run unsandboxed ({why}); "
            "a development run, it cannot publish")
        return
    try:
        sandbox.check()
    except sandbox.SandboxUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None


def harness_run(config) -> HarnessRun | None:
    """This run's state; None when pytest_configure refused the run before making it."""
    return config.stash.get(_RUN_KEY, None)


#: name prefixes of this harness's plugins: its modules and the plugin objects they register
_PLUGIN_PREFIXES = ("harness.", "mxnet-")


def disabled_harness_plugins(config) -> list:
    """The harness plugins blocked with ``-p no:NAME`` (command line, PYTEST_ADDOPTS or an ini's
    addopts: pytest reads all three before configuring)."""
    names = []
    for name, plugin in config.pluginmanager.list_name_plugin():
        base = name.removeprefix("pytest_")
        if plugin is None and base.startswith(_PLUGIN_PREFIXES) and base not in names:
            names.append(base)
    return names


def inactive_harness_plugins(config) -> list:
    """Blocked harness plugins, and plugin modules of the conftest's list that are not registered."""
    run = harness_run(config)
    missing = [n for n in (run.plugins if run else ()) if not config.pluginmanager.has_plugin(n)]
    return list(dict.fromkeys([*disabled_harness_plugins(config), *missing]))


def disabled_plugins_message(names) -> str:
    """One message, whatever put the ``-p no:`` there."""
    shown = ", ".join(names)
    return (f"harness plugin(s) not active: {shown}. Every plugin of this harness takes part in its "
            "verdicts (the release set, the wheel pin, the GPU policy, the ledger...), so a run "
            f"without one is refused; remove -p no:{names[0]} from the command line, PYTEST_ADDOPTS "
            "or the ini's addopts")


def harness_options(config) -> RunOptions:
    return config.stash[_RUN_KEY].options


def fix_release_options(config, version: str, mxnet_src: Path | None) -> None:
    """Install the publish run's options (RunOptions.for_release): the one replacement of the
    options made in pytest_configure, at session start, before any fixture has read them."""
    run = config.stash[_RUN_KEY]
    if run.release_fixed:
        raise RuntimeError("the release options were already fixed in this session")
    run.options = run.options.for_release(version, mxnet_src)
    run.release_fixed = True


def is_release_run(config) -> bool:
    """A run selected with ``-m release`` (alone or in an expression): skips count as failures."""
    return bool(re.search(r"\brelease\b", config.option.markexpr or "")) and not re.search(
        r"\bnot\s+release\b", config.option.markexpr or "")


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")




class RunDir:
    """The directory of one run, common to all its xdist workers: ``harness-shared`` (run-once
    records, the pinned wheel, the extracted wheel, the venv) and pytest's own basetemp (``tmp``).

    Made by the controller in pytest_configure, before pytest's tmp-path plugin reads
    ``--basetemp``: the user's ``--basetemp DIR`` (emptied now, kept after the run, as pytest
    does with it), else a fresh ``run-*`` dir under ``<tmp>/mxnet-harness-of-<user>/`` that is
    removed after a green run (``tmp_path_retention_policy = failed``) and of which only the
    newest ``tmp_path_retention_count`` outlive later runs, as pytest's numbered basetemps. Each
    run holds a lock on its dir, so a concurrent run's is never pruned. Workers receive the
    controller's dir through ``workerinput`` (pytest-xdist's pytest_configure_node).
    """

    #: the workerinput key an xdist worker finds its controller's run dir under
    WORKER_INPUT = "mxnet_harness_run_dir"

    def __init__(self, root: Path, given: bool, lock=None):
        self.root = root
        self.given = given
        self._lock = lock
        self.exitstatus = None

    @property
    def shared(self) -> Path:
        return self.root / "harness-shared"

    @classmethod
    def for_controller(cls, config) -> "RunDir":
        given = config.option.basetemp
        if given:
            root = Path(os.path.abspath(given))
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True, mode=0o700)
        else:
            parent = Path(tempfile.gettempdir()) / f"mxnet-harness-of-{getpass.getuser()}"
            parent.mkdir(mode=0o700, exist_ok=True)
            _check_private(parent)
            root = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
        lock = open(root / ".lock", "w")  # noqa: SIM115 - held for the whole run
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = cls(root, bool(given), lock)
        if not given:
            _prune_runs(root.parent, keep=int(config.getini("tmp_path_retention_count")) - 1, current=root)
        # pytest's basetemp (tmp_path, xdist's per-worker dirs) inside the run's dir, beside the shared dir.
        config.option.basetemp = str(root / "tmp")
        return run

    def finish(self, config) -> None:
        """End of the run: drop the lock; a green run's own dir is removed under policy ``failed``,
        and so is one of a run refused before its session started (nothing ran in it)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if not self.given and (self.exitstatus is None or (
                self.exitstatus == 0 and config.getini("tmp_path_retention_policy") == "failed")):
            shutil.rmtree(self.root, ignore_errors=True)


def _check_private(parent: Path) -> None:
    """The runs' parent dir in the shared temp dir must be this user's own, writable by nobody else:
    one made beforehand by another user (or left world-writable) lets them swap a run's files,
    the pinned wheel and the verdicts among them (issue 29)."""
    st = parent.lstat()
    problems = []
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        problems.append("is not a directory (a symlink?)")
    if st.st_uid != os.getuid():
        problems.append(f"is owned by uid {st.st_uid}, not by this user ({os.getuid()})")
    if st.st_mode & 0o022:
        problems.append(f"is writable by others (mode {oct(st.st_mode & 0o777)})")
    if problems:
        raise pytest.UsageError(
            f"the harness's run dir parent {parent} {' and '.join(problems)}: another user could change a "
            f"run's files. Remove it (or pass --basetemp=DIR of your own) and run again")


def _prune_runs(parent: Path, keep: int, current: Path) -> None:
    """Remove older run dirs beyond the newest ``keep``, skipping any whose run still holds its lock."""
    def mtime(d):
        try:
            return d.stat().st_mtime
        except OSError:
            return 0.0
    older = sorted((d for d in parent.glob("run-*") if d != current), key=mtime, reverse=True)
    for d in older[max(keep, 0):]:
        try:
            with open(d / ".lock", "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for p in d.rglob("*"):  # a pinned wheel is read-only
                    if p.is_dir() and not p.is_symlink():
                        p.chmod(0o700)
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue


def open_run_dir(config) -> RunDir:
    """The run's dir, made once in pytest_configure (see RunDir)."""
    if is_worker(config):
        return RunDir(Path(config.workerinput[RunDir.WORKER_INPUT]), given=True)
    return RunDir.for_controller(config)


def shared_root(config) -> Path | None:
    """The directory common to all xdist workers of this run (where run-once records live)."""
    run = harness_run(config)
    return run.dir.shared if run is not None else None


def add_report_lines(config, lines) -> None:
    """Extra lines for the end of the terminal summary (provenance report, build chain, dist/)."""
    config.stash[_RUN_KEY].report_lines.extend(lines)


def report_at_session_end(config, lines) -> None:
    """Lines decided in pytest_sessionfinish: into the summary, and said at once on an xdist
    controller, whose gate table (which prints the report lines) is empty."""
    add_report_lines(config, lines)
    if not config.stash[_RUN_KEY].results:
        for line in lines:
            say(line)


def _end_progress_line(config) -> bool:
    """Finish pytest's progress line (``tests/test_x.py ..``) before a live line is written, so
    build output starts on its own line instead of being spliced into the dots. True when a line
    was ended (LiveStream.resume_progress_line then starts the next dots with the file name)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and getattr(tr, "currentfspath", None) is not None:
        tr.ensure_newline()
        tr.flush()
        return True
    return False


class LiveStream:
    """Writes straight to the terminal while pytest's capture is on (as live logging does)."""

    def __init__(self):
        self.config = None
        self.line_ended = False

    def resume_progress_line(self, nodeid: str) -> None:
        """After live lines, pytest's next result letter would stand alone on a line: write the
        test file's name first, as pytest does for a new file (harness.chain calls this)."""
        if not self.line_ended or self.config is None:
            return
        self.line_ended = False
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and getattr(tr, "currentfspath", None) is None:
            tr.write_fspath_result(nodeid, "")

    def write(self, text):
        capman = self.config.pluginmanager.getplugin("capturemanager") if self.config else None
        if capman is None:
            (sys.__stderr__ or sys.stderr).write(text)
            return
        with capman.global_and_fixture_disabled():
            self.line_ended = _end_progress_line(self.config) or self.line_ended
            sys.stderr.write(text)
            sys.stderr.flush()

    def flush(self):
        pass


#: Progress of long steps for the person watching; harness.chain points it at the run's config.
LIVE = LiveStream()


def say(line: str) -> None:
    print(line, file=LIVE, flush=True)
