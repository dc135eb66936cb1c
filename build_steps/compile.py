"""Compile libmxnet: ``cmake --build --target mxnet`` with live progress and a full log.

The real fork is ~1300 Ninja steps (45-70 min), so the terminal shows ``[N/M]`` and the elapsed
time while it runs (written to the real stderr: pytest captures sys.stderr), the log file gets
every line, and a failure shows the log's tail and path. An unchanged tree is a no-op
("ninja: no work to do"), which the result records.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .configure import record_step
from .errors import StepError, log_tail

_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


@dataclass
class CompileResult:
    library: Path
    seconds: float
    steps_run: int
    total_steps: int
    no_work: bool
    log: Path

    def to_json(self) -> dict:
        d = asdict(self)
        d["library"], d["log"] = str(self.library), str(self.log)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "CompileResult":
        return cls(**{**d, "library": Path(d["library"]), "log": Path(d["log"])})


def _progress_stream():
    return sys.__stderr__ or sys.stderr


def compile_mxnet(build_dir: Path, jobs: int, log_dir: Path, target: str = "mxnet",
                  env: dict | None = None, progress=None, library_name: str = "libmxnet.so") -> CompileResult:
    build_dir, log_dir = Path(build_dir), Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "compile.log"
    out = progress or _progress_stream()
    cmd = ["cmake", "--build", str(build_dir), "--target", target, "--parallel", str(jobs)]
    start = time.monotonic()
    steps = total = 0
    no_work = False
    last_draw = 0.0
    record_step(build_dir, "compile", f"jobs={jobs}")
    with open(log, "w") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, env={**os.environ, **(env or {})})
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
    seconds = time.monotonic() - start
    if rc != 0:
        raise StepError("compile", f"cmake --build {build_dir} --target {target} failed (exit {rc})",
                        log=log, tail=log_tail(log))
    library = build_dir / library_name
    if not library.is_file():
        raise StepError("compile", f"{library} missing after the build", log=log, tail=log_tail(log))
    print(f"[compile] {'no work to do (tree unchanged)' if no_work else f'{steps} steps'} "
          f"in {seconds:.1f}s -> {library}", file=out, flush=True)
    return CompileResult(library=library, seconds=seconds, steps_run=steps, total_steps=total,
                         no_work=no_work, log=log)
