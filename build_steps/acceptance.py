"""The fork's wheel acceptance suite as data: its shards, which of them apply, how one runs, and
what its log says.

The fork's ``tools/run_wheel_full_test.sh`` runs about thirty pytest "shards" of its own tests
against a freshly installed wheel. The shard list lives in this repository as a data file
(``acceptance_shards.toml`` beside this module), read from the script of the pinned commit once
and kept by hand; ``parse_fork_script`` reads the script again so a selftest can tell when the two
disagree. ``run_shard`` runs one shard with the venv's interpreter and turns its log into a
verdict the way the script's summary does (PASS / FAIL / ERROR / NO_TESTS / INCOMPLETE), except
that a shard that ran no test is NO_TESTS even where the fork's root conftest turns pytest's
exit 5 into 0.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .errors import StepError, UsageError
from . import sandbox
from .venv import Venv, clean_env, index_args, install_box, pip_command

DEFAULT_SHARDS_FILE = Path(__file__).resolve().with_name("acceptance_shards.toml")
LANES = ("cpu", "dnnl", "quant", "onnx", "gpu")
#: Lane headings of the fork's script ("# ----- DNNL / oneDNN lane ...") -> lane names.
_LANE_WORDS = {"cpu": "cpu", "dnnl": "dnnl", "quantization": "quant", "onnx": "onnx", "gpu": "gpu"}
#: What the fork's script exports for every shard (thread caps, unbuffered output, tests told to
#: import the installed mxnet rather than prepend the source python/, quiet pytest output).
FORK_SHARD_ENV = {
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1",
    "PYTHONUNBUFFERED": "1", "MXNET_TEST_USE_INSTALLED_MXNET": "1",
    "PYTEST_ADDOPTS": "-p no:faulthandler --tb=short --color=no --durations=20",
}
#: The summary line the fork's summary greps for, plus pytest's "no tests ran" form.
_SUMMARY = re.compile(r"^=+ (.*(?:passed|failed|error|skipped|xfailed|xpassed|no tests ran|deselected).*"
                      r" in [0-9.]+s.*?) =+$")
_FAILED_ID = re.compile(r"^(FAILED|ERROR) (\S+)")
#: A ``-v`` result line, serial ("path::test PASSED [ 35%]") or xdist ("[gw0] [ 2%] PASSED path::test").
_VERBOSE_RESULT = re.compile(r"^(?:\[gw\d+\] \[ *\d+%\] (?P<w1>[A-Z]+) (?P<id1>\S+::\S+)"
                             r"|(?P<id2>\S+::\S+) (?P<w2>[A-Z]+)(?: +\[ *\d+%\])?)\s*$")
_VERBOSE_WORDS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
                  "XFAIL": "xfailed", "XPASS": "xpassed"}


@dataclass(frozen=True)
class Shard:
    id: str
    description: str
    lane: str
    paths: tuple
    args: tuple = ()
    #: the lane whose worker count the fork passes as ``-n`` (its $PARALLEL_<LANE>), or None
    workers: str | None = None
    #: the fork runs the shard only when this path exists in the tree
    only_if_exists: str | None = None
    timeout_min: float = 30

    def pytest_args(self, parallel: dict) -> list:
        out = [*self.paths, *self.args]
        if self.workers:
            out += ["-n", str(parallel[self.workers])]
        return out


@dataclass(frozen=True)
class ShardSuite:
    source: Path
    shards: tuple
    parallel: dict
    test_requirements: tuple
    cwd: str = "."
    fork_script: str = "tools/run_wheel_full_test.sh"
    fork_commit: str = ""

    def by_id(self) -> dict:
        return {s.id: s for s in self.shards}


def load_suite(path: Path | None = None) -> ShardSuite:
    """Read and check a shard data file; a malformed one is a UsageError naming the entry."""
    path = Path(path or DEFAULT_SHARDS_FILE)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"shard data file {path}: {exc.strerror}; pass an existing file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"shard data file {path} is not valid TOML: {exc}") from None
    run = data.get("run", {})
    parallel = {k: int(v) for k, v in data.get("parallel", {}).items()}
    default_timeout = float(run.get("timeout_min", 30))
    shards, seen = [], set()
    for i, raw in enumerate(data.get("shard", [])):
        where = f"shard data file {path}, [[shard]] #{i + 1} ({raw.get('id', 'no id')})"
        missing = [k for k in ("id", "description", "lane", "paths") if not raw.get(k)]
        if missing:
            raise UsageError(f"{where}: missing {', '.join(missing)}")
        if raw["id"] in seen:
            raise UsageError(f"{where}: the id {raw['id']} is used twice")
        seen.add(raw["id"])
        if raw["lane"] not in LANES:
            raise UsageError(f"{where}: lane {raw['lane']!r} is not one of {', '.join(LANES)}")
        workers = raw.get("workers")
        if workers is not None and workers not in parallel:
            raise UsageError(f"{where}: workers = {workers!r} has no entry in [parallel]")
        unknown = set(raw) - {"id", "description", "lane", "paths", "args", "workers", "only_if_exists",
                              "timeout_min"}
        if unknown:
            raise UsageError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
        shards.append(Shard(id=raw["id"], description=raw["description"], lane=raw["lane"],
                            paths=tuple(raw["paths"]), args=tuple(raw.get("args", ())), workers=workers,
                            only_if_exists=raw.get("only_if_exists"),
                            timeout_min=float(raw.get("timeout_min", default_timeout))))
    if not shards:
        raise UsageError(f"shard data file {path} lists no [[shard]] entries")
    fork = data.get("fork", {})
    return ShardSuite(source=path, shards=tuple(shards), parallel=parallel,
                      test_requirements=tuple(data.get("requirements", {}).get("test", ())),
                      cwd=run.get("cwd", "."), fork_script=fork.get("script", "tools/run_wheel_full_test.sh"),
                      fork_commit=fork.get("commit", ""))


#: --shard-split: the plugin the shard's own pytest loads, and the directory that holds it alone
SHARD_PART_DIR = Path(__file__).resolve().with_name("shard_part")
SHARD_PART_PLUGIN = "mxnet_shard_part"
SHARD_PART_ENV = "MXNET_SHARD_PART"
_SPLIT = re.compile(r"^([A-Za-z0-9_.-]+):(\d+)/(\d+)$")


def parse_shard_split(values, known) -> dict:
    """``["gpu_operator_numpy:2/3", ...]`` -> {shard id: (2, 3)}; UsageError naming a bad one."""
    out = {}
    for text in values or ():
        m = _SPLIT.match(text.strip())
        if not m:
            raise UsageError(f"--shard-split {text}: write SHARD:K/N (e.g. gpu_operator_numpy:2/3)")
        shard, k, n = m.group(1), int(m.group(2)), int(m.group(3))
        if shard not in known:
            raise UsageError(f"--shard-split {text}: no shard {shard!r}; known: {', '.join(known)}")
        if not (n >= 2 and 1 <= k <= n):
            raise UsageError(f"--shard-split {text}: need N >= 2 and 1 <= K <= N")
        if shard in out:
            raise UsageError(f"--shard-split {text}: {shard} is split twice; one run runs one part")
        out[shard] = (k, n)
    return out


def parse_id_list(text: str | None, known, what: str) -> tuple | None:
    """``a,b`` -> ("a", "b"), each checked against ``known``; None when not given."""
    if not text:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"--{what} {text}: unknown {', '.join(bad)}; known: {', '.join(known)}")
    return names


def select(suite: ShardSuite, shards=None, lanes=None) -> list:
    """The shards named by ``--shards`` and in ``--lanes`` (each filter only when given)."""
    return [s for s in suite.shards if (shards is None or s.id in shards) and (lanes is None or s.lane in lanes)]


def parse_parallel(values, suite: ShardSuite) -> dict:
    """``--shard-workers gpu=2`` overrides on top of the data file's [parallel] (the fork's defaults)."""
    out = dict(suite.parallel)
    for item in values or ():
        lane, _, n = item.partition("=")
        if lane not in out or not n.isdigit() or int(n) < 1:
            raise UsageError(f"--shard-workers {item}: write LANE=N with LANE one of {', '.join(out)} "
                             "and N a positive number")
        out[lane] = int(n)
    return out


def not_applicable(shard: Shard, source_root: Path) -> str | None:
    """Why the fork's script would not run this shard on this tree, or None."""
    if shard.only_if_exists and not (Path(source_root) / shard.only_if_exists).exists():
        return f"{shard.only_if_exists} is absent (the fork's script runs {shard.id} only when it exists)"
    return None


# ------------------------------------------------------------------------------------------
# The fork's script, read again: what the data file must agree with
# ------------------------------------------------------------------------------------------
@dataclass
class ScriptShard:
    id: str
    description: str
    lane: str
    args: list
    only_if_exists: str | None = None
    in_gpu_block: bool = False


def _logical_lines(text: str):
    buf = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        yield buf + line
        buf = ""
    if buf:
        yield buf


def parse_fork_script(text: str) -> list:
    """Every ``run_shard <id> <description> -- <args>`` call of run_wheel_full_test.sh, with its
    lane heading, the ``if [ -f/-d path ]`` around it and whether it sits in the GPU block."""
    out, lane, conds, in_gpu = [], None, [], False
    for line in _logical_lines(text):
        s = line.strip()
        m = re.match(r"#\s*-{3,}\s*(\w+)", s)
        if m and "lane" in s.lower():
            lane = _LANE_WORDS.get(m.group(1).lower(), m.group(1).lower())
            continue
        if s.startswith("#") or not s:
            continue
        m = re.match(r"if \[ -[fd] (\S+) \]; then$", s)
        if m:
            conds.append(m.group(1))
            continue
        if re.match(r'if \[ "\$\{WHEEL_NUM_GPUS', s):
            conds.append(None)
            in_gpu = True
            continue
        if s == "fi" and conds:
            if conds.pop() is None:
                in_gpu = False
            continue
        if s.startswith("run_shard ") and "()" not in s:
            words = shlex.split(s)
            if "--" not in words:
                continue
            dash = words.index("--")
            shard_id, desc = words[1], " ".join(words[2:dash])
            cond = next((c for c in reversed(conds) if c), None)
            out.append(ScriptShard(shard_id, desc, lane or "?", words[dash + 1:], cond, in_gpu))
    return out


def data_script_differences(suite: ShardSuite, script_shards: list) -> list:
    """Each way the data file and the fork's script disagree, in words (empty when they agree)."""
    data = suite.by_id()
    script = {s.id: s for s in script_shards}
    diffs = []
    for sid in script.keys() - data.keys():
        diffs.append(f"{sid}: in the fork's script, not in {suite.source.name} (a shard was added: copy it over)")
    for sid in data.keys() - script.keys():
        diffs.append(f"{sid}: in {suite.source.name}, not in the fork's script (a shard was removed or renamed)")
    env_name = {f"$PARALLEL_{k.upper()}": k for k in suite.parallel}
    for sid in sorted(data.keys() & script.keys()):
        d, s = data[sid], script[sid]
        args, workers = list(s.args), None
        if "-n" in args:
            i = args.index("-n")
            workers = env_name.get(args[i + 1], args[i + 1])
            del args[i:i + 2]
        if [*d.paths, *d.args] != args:
            diffs.append(f"{sid}: pytest args differ: data {[*d.paths, *d.args]} vs script {args}")
        if d.workers != workers:
            diffs.append(f"{sid}: -n differs: data workers={d.workers} vs script {workers}")
        if d.lane != s.lane:
            diffs.append(f"{sid}: lane differs: data {d.lane} vs script {s.lane}")
        if (d.lane == "gpu") != s.in_gpu_block:
            diffs.append(f"{sid}: the script {'does' if s.in_gpu_block else 'does not'} run it only when "
                         "the wheel sees a GPU; the data's lane says otherwise")
        if d.only_if_exists != s.only_if_exists:
            diffs.append(f"{sid}: condition differs: data only_if_exists={d.only_if_exists} vs script {s.only_if_exists}")
        if d.description != s.description:
            diffs.append(f"{sid}: description differs: data {d.description!r} vs script {s.description!r}")
    return sorted(diffs)


# ------------------------------------------------------------------------------------------
# The venv: test requirements, and where mxnet imports from
# ------------------------------------------------------------------------------------------
def install_test_requirements(venv: Venv, requirements, *, pins=(), find_links=(), index_url=None,
                              no_index: bool = False, log: Path) -> list:
    """pip install the suite's test extras into the venv (once: a stamp file in the venv records
    them). ``pins`` (the user's --extra-requirement) go into the same resolver call so that, e.g.,
    numpy<1.24 for an old wheel survives scipy's install."""
    from filelock import FileLock
    reqs = list(requirements)
    stamp = Path(venv.root) / ".harness-acceptance-requirements.json"
    want = json.dumps(sorted(reqs + list(pins)))
    with FileLock(str(stamp) + ".lock"):
        if stamp.exists() and stamp.read_text() == want:
            return reqs
        if reqs:
            cmd = pip_command(venv) + index_args(find_links, index_url, no_index) + [*reqs, *pins]
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as fh:
                fh.write("$ " + " ".join(cmd) + "\n")
                fh.flush()
                argv, child_env = sandbox.wrap(cmd, venv.env(pip=True), **install_box(venv, find_links))
                proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=child_env,
                                      timeout=3600)
            if proc.returncode != 0:
                from .errors import log_tail
                raise StepError("acceptance", f"pip install of the acceptance suite's test requirements "
                                f"{' '.join(reqs)} failed (exit {proc.returncode})", log, log_tail(log, 15))
        stamp.write_text(want)
    return reqs


_VERIFY = r"""
import json, os, sys
res = {}
try:
    import mxnet
    res["file"] = os.path.realpath(mxnet.__file__)
    res["version"] = getattr(mxnet, "__version__", None)
    try:
        import mxnet.runtime as rt
        res["features"] = {k: bool(v.enabled) for k, v in rt.Features().items()}
    except Exception as exc:
        res["features_error"] = repr(exc)
    try:
        dev = getattr(mxnet, "device", None) or getattr(mxnet, "context", None)
        res["num_gpus"] = int(dev.num_gpus() if dev is not None and hasattr(dev, "num_gpus") else mxnet.num_gpus())
    except Exception as exc:
        res["num_gpus"] = 0
        res["num_gpus_error"] = repr(exc)
except Exception as exc:
    res["import_error"] = "%s: %s" % (type(exc).__name__, exc)
print("HARNESS-VERIFY " + json.dumps(res))
"""


def shard_env(extra: dict | None = None, pass_env=()) -> dict:
    """clean_env plus the fork's exports, minus this harness's own pytest/xdist variables (a shard
    is a pytest of its own: PYTEST_XDIST_WORKER leaking in would make it think it is a worker)."""
    env = {k: v for k, v in clean_env(pass_env=pass_env).items() if not k.startswith("PYTEST_")}
    env.update(FORK_SHARD_ENV)
    env.update(extra or {})
    return env


def shard_box(venv: Venv, source_root: Path, workdir: Path, out_dir: Path | None = None) -> dict:
    """A shard's sandbox (build_steps.sandbox): the venv read-only; the tree writable, as the fork's
    tests write beside themselves, but its .git hidden (hooks and config would run outside the
    sandbox at the user's next git command); its log dir (junit XML) writable; no network."""
    return {"readable": [venv.root], "writable": [source_root, *([out_dir] if out_dir else [])],
            "cwd": workdir, "masked": [Path(source_root) / ".git"]}


def verify_installed_mxnet(venv: Venv, source_root: Path, cwd: str = ".", env: dict | None = None) -> dict:
    """Import mxnet as the shards will (venv interpreter, the shards' cwd and environment) and
    check it is the venv's; returns version, Features, num_gpus and ``problems``."""
    workdir = Path(source_root) / cwd
    argv, child_env = sandbox.wrap([str(venv.python), "-c", _VERIFY], shard_env(env, venv.pass_env),
                                   **shard_box(venv, source_root, workdir))
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(workdir), env=child_env, timeout=600)
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("HARNESS-VERIFY ")), None)
    if line is None:
        raise StepError("acceptance", f"the import check in {venv.python} (cwd {workdir}) exited "
                        f"{proc.returncode} without a result:\n{proc.stderr.strip()[-1500:]}")
    facts = json.loads(line.split(" ", 1)[1])
    problems = []
    if facts.get("import_error"):
        problems.append(f"`import mxnet` fails in the venv, run from {workdir}: {facts['import_error']}")
    else:
        site = os.path.realpath(venv.site_packages) + os.sep
        if not facts["file"].startswith(site):
            problems.append(f"mxnet resolved outside the venv: {facts['file']} (run from {workdir}; the source "
                            f"tree's python/ or another path shadows the installed wheel in {site})")
    facts["problems"] = problems
    return facts


def gpu_for_worker(worker_id: str | None, visible: list) -> str | None:
    """The GPU an xdist worker pins its GPU shards to (gwK -> the K-th visible GPU, round robin),
    so a host with N GPUs runs N GPU shards at once; None outside xdist (all GPUs stay visible)."""
    m = re.fullmatch(r"gw(\d+)", worker_id or "")
    if not m or not visible:
        return None
    return str(visible[int(m.group(1)) % len(visible)])


# ------------------------------------------------------------------------------------------
# One shard
# ------------------------------------------------------------------------------------------
@dataclass
class ShardResult:
    id: str
    lane: str
    result: str  # PASS FAIL ERROR NO_TESTS INCOMPLETE
    summary: str
    seconds: float
    log: str
    returncode: int | None = None
    failing: list = field(default_factory=list)
    reason: str = ""
    #: the first ``E   `` line of the log: what the first failure or collection error says
    first_error: str = ""
    command: str = ""
    env: dict = field(default_factory=dict)
    #: "K/N" when this was one part of a split shard (--shard-split)
    part: str = ""

    def to_dict(self) -> dict:
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


def read_shard_log(text: str) -> tuple:
    """(summary line, failing test ids, pytest usage error line, first ``E`` line) from a shard's log."""
    summary = ""
    failing, usage, first_error = [], "", ""
    for line in text.splitlines():
        if not first_error and line.startswith("E  ") and line[1:].strip():
            first_error = line[1:].strip()
        m = _SUMMARY.match(line.strip())
        if m:
            summary = m.group(1).strip()
        m = _FAILED_ID.match(line)
        if m and m.group(2) not in failing:
            failing.append(m.group(2))
        if not usage and line.startswith("ERROR: "):
            usage = line[7:].strip()
    return summary, failing, usage, first_error


def partial_results(text: str) -> tuple:
    """What a shard that never reached its summary line (a timeout, a crash) got through: the
    ``-v`` result lines counted ("264 passed, 2 failed") and the failing ids among them."""
    counts, failing = {}, []
    for line in text.splitlines():
        m = _VERBOSE_RESULT.match(line.strip())
        if not m:
            continue
        word, nodeid = (m.group("w1"), m.group("id1")) if m.group("w1") else (m.group("w2"), m.group("id2"))
        if word not in _VERBOSE_WORDS:
            continue
        counts[_VERBOSE_WORDS[word]] = counts.get(_VERBOSE_WORDS[word], 0) + 1
        if word in ("FAILED", "ERROR") and nodeid not in failing:
            failing.append(nodeid)
    text = ", ".join(f"{n} {w}" for w, n in counts.items())
    return text, failing


def _junit_counts(path: Path) -> dict | None:
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    ids = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            ids.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    counts["failing"] = ids
    return counts


def judge(rc: int | None, log_text: str, junit: dict | None, timed_out: bool, timeout_min: float) -> tuple:
    """(result, summary, failing ids, reason) like the fork's summary.md, but strict on emptiness."""
    summary, failing, usage, _ = read_shard_log(log_text)
    if junit and not failing:
        failing = junit["failing"]
    if timed_out or (rc is not None and rc < 0):
        if timed_out:
            why = f"timed out after {timeout_min:g} min"
        else:
            try:
                why = f"pytest was killed by {signal.Signals(-rc).name}"
            except ValueError:
                why = f"pytest was killed by signal {-rc}"
        if not summary:
            done, seen_failing = partial_results(log_text)
            summary = f"partial: {done}" if done else ""
            failing = failing or seen_failing
        return "INCOMPLETE", summary, failing, why
    ran = junit["tests"] if junit else None
    if rc == 5 or ran == 0 or (not summary and "0 items" in log_text) or "no tests ran" in summary:
        why = "the shard ran no test (pytest exit 5, or the fork's conftest turned exit 5 into 0)"
        return "NO_TESTS", summary, failing, why
    if not summary:
        reason = f"pytest exited {rc} without a summary line"
        if usage:
            reason += f": {usage}"
        return "INCOMPLETE", summary, failing, reason
    if rc == 0:
        return "PASS", summary, failing, ""
    if re.search(r"\d+ errors?\b", summary):
        return "ERROR", summary, failing, ""
    return "FAIL", summary, failing, ""


def run_shard(shard: Shard, venv: Venv, source_root: Path, log_dir: Path, *, parallel: dict, cwd: str = ".",
              timeout_min: float | None = None, env: dict | None = None, part: tuple | None = None) -> ShardResult:
    """Run one shard: ``python -m pytest <args>`` with the venv's interpreter from the source tree,
    loader variables cleared, its own log (header and ``rc=`` footer as the fork writes them),
    junit XML beside it, killed with its process group after the timeout. ``part`` (K, N): only
    the K-th of N deterministic parts of its tests (build_steps/shard_part)."""
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
    cmd = [str(venv.python), "-m", "pytest", *args, "-rfE", f"--junitxml={junit}"]
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
        argv, child_env = sandbox.wrap(cmd, child_env, **shard_box(venv, source_root, Path(source_root) / cwd,
                                                                   log_dir))
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=str(Path(source_root) / cwd),
                                env=child_env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_min * 60)
        except subprocess.TimeoutExpired:
            timed_out = True
            # The shard's own xdist workers and spawned children go with it.
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        except BaseException:
            # Ctrl-C reaches only the foreground group: the shard's own session must be ended here.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        rc = sandbox.returncode(rc)  # bwrap's 128+N of a pytest killed by signal N
        seconds = time.monotonic() - start
        fh.write(f"\n### finished: {datetime.now(timezone.utc):%a %b %d %H:%M:%S UTC %Y}   "
                 f"rc={124 if timed_out else rc}\n")
    text = log.read_text(errors="replace")
    result, summary, failing, reason = judge(rc, text, _junit_counts(junit), timed_out, timeout_min)
    return ShardResult(id=shard.id, lane=shard.lane, result=result, summary=summary, seconds=round(seconds, 1),
                       log=str(log), returncode=124 if timed_out else rc, failing=failing, reason=reason,
                       command=" ".join(shlex.quote(c) for c in cmd), env=dict(env or {}),
                       first_error=read_shard_log(text)[3], part=f"{part[0]}/{part[1]}" if part else "")


# ------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------
def table_lines(results: list) -> list:
    """The per-shard table for the terminal (id, lane, result, seconds, pytest summary, log)."""
    if not results:
        return []
    w = max(len(r["id"]) for r in results)
    lines = [f"{'shard':<{w}}  {'lane':<5}  {'result':<10}  {'seconds':>7}  pytest summary / log"]
    for r in sorted(results, key=lambda r: r["id"]):
        text = r["summary"] or r.get("reason") or ""
        if r["summary"] and r.get("reason"):
            text += f" ({r['reason']})"
        lines.append(f"{r['id']:<{w}}  {r['lane']:<5}  {r['result']:<10}  {r['seconds']:>7.1f}  {text}")
        lines.append(f"{'':<{w}}  {'':<5}  {'':<10}  {'':>7}  {r['log']}")
    bad = [r["id"] for r in results if r["result"] != "PASS"]
    lines.append(f"{len(results) - len(bad)}/{len(results)} shards PASS"
                 + (f"; not PASS: {', '.join(sorted(bad))}" if bad else ""))
    return lines


def summary_markdown(results: list, header: dict) -> str:
    """summary.md as the fork writes it, with the lane, seconds and log columns added."""
    out = ["# MXNet wheel acceptance report", ""]
    out += [f"{k}: `{v}`" for k, v in header.items()] + ["", "## Shard results", "",
                                                          "| Shard | Lane | Result | pytest summary | Seconds | Log |",
                                                          "|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["id"]):
        text = (r["summary"] or r.get("reason") or "").replace("|", "\\|")
        out.append(f"| {r['id']} | {r['lane']} | {r['result']} | {text} | {r['seconds']:.1f} | {r['log']} |")
    return "\n".join(out) + "\n"
