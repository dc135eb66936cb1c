"""Compile libmxnet: ``cmake --build --target mxnet`` with live progress and a full log.

The real fork is ~1300 Ninja steps (45-70 min), so the terminal shows ``[N/M]`` and the elapsed
time while it runs (written to the real stderr: pytest captures sys.stderr), the log file gets
every line as it comes, and a failure shows the log's first error lines and its path. Ctrl-C or
SIGTERM stops the whole build at once and says where it stopped; the next run resumes there. An unchanged tree is a no-op
("ninja: no work to do"), which the result records.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import launcher as compiler_cache
from .configure import record_step
from .errors import BuildInterrupted, StepError, log_excerpt
from .once import JsonRecord

_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


@dataclass
class CompileResult(JsonRecord):
    library: Path
    seconds: float
    steps_run: int
    total_steps: int
    no_work: bool
    log: Path
    #: the compiler launcher's counters for this build (launcher.LauncherStats), None when not asked
    launcher: dict | None = None


def _progress_stream():
    return sys.__stderr__ or sys.stderr


#: Seconds the build's process group gets to exit on SIGTERM before it is killed.
STOP_GRACE = 2.0


def stop_process_group(proc: subprocess.Popen, grace: float = STOP_GRACE) -> None:
    """Stop a build started in its own session: cmake, ninja and every compiler under them.

    Terminal Ctrl-C reaches only pytest's process group, so the build's group is signalled here:
    SIGTERM (ninja and the compilers exit and remove partial outputs), then SIGKILL for whatever
    is left, so no compiler outlives the run."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    try:  # stragglers of an exited ninja (a compiler reparented to init) are still in the group
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def compile_mxnet(build_dir: Path, jobs: int, log_dir: Path, target: str = "mxnet",
                  env: dict | None = None, progress=None, library_name: str = "libmxnet.so",
                  launcher=None) -> CompileResult:
    """Build ``target`` (or a list of targets) with live ``[N/M]`` progress. ``compile.log`` is appended to (one header
    per run, so a resumed build keeps the first run's errors) and written line by line, so it is
    complete up to the moment of a crash or an interrupt. With ``launcher`` the result carries that
    tool's counters for this build (build_steps.launcher)."""
    build_dir, log_dir = Path(build_dir), Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "compile.log"
    out = progress or _progress_stream()
    targets = [target] if isinstance(target, str) else list(target)
    cmd = ["cmake", "--build", str(build_dir), "--target", *targets, "--parallel", str(jobs)]
    before = compiler_cache.snapshot(launcher, env) if launcher else None
    start = time.monotonic()
    steps = total = 0
    no_work = False
    last_draw = 0.0
    record_step(build_dir, "compile", f"jobs={jobs}")
    with open(log, "a", buffering=1) as fh:
        first_line = fh.tell()
        fh.write(f"==== compile run {time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} "
                 f"jobs={jobs} target={' '.join(targets)} ====\n$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            for line in proc.stdout:
                fh.write(line)
                m = _PROGRESS.match(line)
                if m:
                    steps, total = int(m.group(1)), int(m.group(2))
                    now = time.monotonic()
                    if now - last_draw > 0.5 or steps == total:  # keep the terminal readable
                        last_draw = now
                        print(f"[compile] [{steps}/{total}] {now - start:6.0f}s  {line[m.end():].strip()[:90]}",
                              file=out, flush=True)
                if "no work to do" in line:
                    no_work = True
            rc = proc.wait()
        except KeyboardInterrupt:
            # SIGINT, or SIGTERM turned into one by the harness: the build must not go on without us.
            stop_process_group(proc)
            where = f"[{steps}/{total}]" if total else "before the first step"
            took = time.monotonic() - start
            fh.write(f"==== interrupted at {where} after {took:.0f}s ====\n")
            raise BuildInterrupted(
                "compile", f"interrupted at {where} after {took:.0f}s; the build was stopped (no "
                f"compiler left running). Re-run the same command to resume: ninja keeps the finished "
                f"steps. Log: {log}") from None
        except BaseException:
            stop_process_group(proc)
            raise
    seconds = time.monotonic() - start
    if rc != 0:
        raise StepError("compile", f"cmake --build {build_dir} --target {' '.join(targets)} failed (exit {rc})",
                        log=log, tail=log_excerpt(log, since=first_line))
    library = build_dir / library_name
    if not library.is_file():
        raise StepError("compile", f"{library} missing after the build", log=log,
                        tail=log_excerpt(log, since=first_line))
    stats = compiler_cache.diff(launcher, before, compiler_cache.snapshot(launcher, env)) if launcher else None
    print(f"[compile] {'no work to do (tree unchanged)' if no_work else f'{steps} steps'} "
          f"in {seconds:.1f}s -> {library}", file=out, flush=True)
    if stats:
        print(f"[compile] {stats.summary()}", file=out, flush=True)
    return CompileResult(library=library, seconds=seconds, steps_run=steps, total_steps=total,
                         no_work=no_work, log=log, launcher=stats.to_json() if stats else None)
