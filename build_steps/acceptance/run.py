"""One acceptance shard run: ``python -m pytest <its args>`` with the venv's interpreter from the
source tree, in its sandbox, with its own log and junit XML, killed after its timeout, and its
verdict (build_steps.acceptance.verdict) as a ``ShardResult``."""
from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import sandbox
from .suite import Shard
from .venv import shard_box, shard_env
from .verdict import judge, junit_counts, partial_results, read_shard_log
from ..errors import PlantedLink, read_log
from ..venv import Venv

#: --shard-split: the plugin the shard's own pytest loads, and the directory that holds it alone
SHARD_PART_DIR = Path(__file__).resolve().with_name("shard_part")
SHARD_PART_PLUGIN = "mxnet_shard_part"
SHARD_PART_ENV = "MXNET_SHARD_PART"


@dataclass
class ShardResult:
    id: str
    lane: str
    result: str  # PASS FAIL ERROR NO_TESTS INCOMPLETE
    summary: str
    seconds: float
    log: str
    returncode: int | None = None
    failing: list[str] = field(default_factory=list)
    reason: str = ""
    #: the first ``E   `` line of the log: what the first failure or collection error says
    first_error: str = ""
    command: str = ""
    env: dict[str, str] = field(default_factory=dict)
    #: "K/N" when this was one part of a split shard (--shard-split)
    part: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def message(self, limit: int = 5) -> str:
        """The gate's failure text: the shard's verdict and summary line, its first failing tests."""
        head = f"shard {self.id} ({self.lane}): {self.result}"
        head += f" -- {self.summary}" if self.summary else ""
        head += f" -- {self.reason}" if self.reason else ""
        lines = [head]
        if self.failing:
            more = len(self.failing) - limit
            lines.append("first failing: " + ", ".join(self.failing[:limit]) + (f" (+{more} more)" if more > 0 else ""))
        if self.first_error and self.result != "PASS":
            lines.append(f"first error: {self.first_error[:300]}")
        lines.append(f"log: {self.log}")
        return "\n".join(lines)


def gpu_for_worker(worker_id: str | None, visible: Sequence[str]) -> str | None:
    """The GPU an xdist worker pins its GPU shards to (gwK -> the K-th visible GPU, round robin),
    so a host with N GPUs runs N GPU shards at once; None outside xdist (all GPUs stay visible)."""
    m = re.fullmatch(r"gw(\d+)", worker_id or "")
    if not m or not visible:
        return None
    return str(visible[int(m.group(1)) % len(visible)])


def run_shard(shard: Shard, venv: Venv, source_root: Path, log_dir: Path, *, parallel: Mapping[str, int],
              cwd: str = ".", timeout_min: float | None = None, env: Mapping[str, str] | None = None,
              part: tuple[int, int] | None = None) -> ShardResult:
    """Run one shard: ``python -m pytest <args>`` with the venv's interpreter from the source tree,
    loader variables cleared, its own log (header and ``rc=`` footer as the fork writes them),
    junit XML beside it, killed with its process group after the timeout. ``part`` (K, N): only
    the K-th of N deterministic parts of its tests (build_steps/acceptance/shard_part)."""
    timeout_min = shard.timeout_min if timeout_min is None else timeout_min
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log, junit = log_dir / f"{shard.id}.log", log_dir / f"{shard.id}.junit.xml"
    junit.unlink(missing_ok=True)
    args = shard.pytest_args(parallel)
    if part is not None:
        args += ["-p", SHARD_PART_PLUGIN]
        env = {**(env or {}), SHARD_PART_ENV: f"{part[0]}/{part[1]}"}
    # -rfE puts "FAILED <nodeid>" lines in the log: the gate names the first failing tests from them.
    # -p no:cacheprovider: the shard writes no .pytest_cache into the tree (the tree is the commit's,
    # and as root the sandbox's uid cannot write the tree's top: pytest warned, one warning a shard)
    cmd = [str(venv.python), "-m", "pytest", *args, "-p", "no:cacheprovider", "-rfE", f"--junitxml={junit}"]
    child_env = shard_env(env, venv.pass_env)
    if part is not None:
        child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SHARD_PART_DIR), child_env.get("PYTHONPATH")]))
    start = time.monotonic()
    timed_out = False
    with open(log, "w") as fh:
        fh.write(f"### {shard.description}\n### pytest args: {' '.join(args)}\n"
                 f"### started: {datetime.now(timezone.utc):%a %b %d %H:%M:%S UTC %Y}\n")
        if env:
            fh.write(f"### env: {' '.join(f'{k}={v}' for k, v in env.items())}\n")
        fh.write("\n")
        fh.flush()
        argv, wrapped_env = sandbox.wrap(cmd, child_env, **shard_box(venv, source_root, Path(source_root) / cwd,
                                                                     log_dir))
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=str(Path(source_root) / cwd),
                                env=wrapped_env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_min * 60)
        except subprocess.TimeoutExpired:
            timed_out = True
            # The shard's own xdist workers and spawned children go with it.
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        except BaseException as exc:
            # Ctrl-C reaches only the foreground group: the shard's own session must be ended here.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            # the log says it was cut short (the run's table reads it: harness.shard_plan)
            fh.write(f"\n### interrupted: {datetime.now(timezone.utc):%a %b %d %H:%M:%S UTC %Y}   "
                     f"the harness stopped waiting for this shard ({type(exc).__name__}); its processes were killed\n")
            raise
        rc = sandbox.returncode(rc)  # bwrap's 128+N of a pytest killed by signal N
        seconds = time.monotonic() - start
        fh.write(f"\n### finished: {datetime.now(timezone.utc):%a %b %d %H:%M:%S UTC %Y}   "
                 f"rc={124 if timed_out else rc}\n")
    text = log.read_text(errors="replace")
    result, summary, failing, reason = judge(rc, text, junit_counts(junit), timed_out, timeout_min)
    return ShardResult(id=shard.id, lane=shard.lane, result=result, summary=summary, seconds=round(seconds, 1),
                       log=str(log), returncode=124 if timed_out else rc, failing=failing, reason=reason,
                       command=" ".join(shlex.quote(c) for c in cmd), env=dict(env or {}),
                       first_error=read_shard_log(text).first_error, part=f"{part[0]}/{part[1]}" if part else "")


def unreported_result(shard: Shard, log: Path, *, started: float | None, part: str, why: str) -> ShardResult:
    """The row of a shard whose gate never reported (the run was interrupted, or stopped early):
    INCOMPLETE, never absent. ``started``: seconds it had run when the run ended, None when it never
    began; a shard that began says what its log shows it got through (``partial: 264 passed``) and
    the failing tests it shows. ``why`` says what ended the run. Never a FAIL: nothing judged it."""
    which = f"this shard (part {part})" if part else "this shard"
    if started is None:
        return ShardResult(id=shard.id, lane=shard.lane, result="INCOMPLETE", summary="", seconds=0.0, log="",
                           reason=f"not started: {why} before {which} began", part=part)
    text = _read_log(log)
    done, failing = partial_results(text)
    return ShardResult(id=shard.id, lane=shard.lane, result="INCOMPLETE",
                       summary=f"partial: {done}" if done else "", seconds=round(started, 1), log=str(log),
                       failing=failing, reason=f"cut short: {why} while {which} ran; it has no result",
                       first_error=read_shard_log(text).first_error, part=part)


def _read_log(log: Path) -> str:
    """A shard's log as text, "" when it is missing, unreadable or not a plain file (the shard's
    sandbox can write its log dir: a link or a FIFO put there is neither followed nor waited on,
    errors.read_log's rule)."""
    try:
        return read_log(log).decode(errors="replace")
    except (OSError, PlantedLink):
        return ""
