"""Before the build: can the index this run names give the venv what it installs beside the wheel?

Real-fork defect 7: on the offline GPU host a 19-minute compile and the package step ended in the
venv install failing to resolve ``onnx<1.22`` against a wheelhouse that held only ``ml-dtypes<0.5``
(onnx 1.21 needs >=0.5), and every runtime gate errored. The wheel had nothing to do with it: the
user's ``--extra-requirement`` values, the gates' own test requirements (onnxruntime) and the
run's index options (``--index-url``, ``--find-links``, ``--no-index``) could not be satisfied
together, which the installer's own resolver says in seconds. So the same installer the venv step
uses (uv when on PATH, else pip: build_steps.venv.pip_command) resolves those requirements here,
without the wheel, for the interpreter the venv will be made from, isolated from the invoker's
configuration and sandboxed as the install is (resolving may build an sdist: untrusted code).

The resolution is a subset of the install's (the wheel's own dependencies join it there), so a
set that cannot be resolved here cannot be installed there: refusing it is never wrong. An index
that cannot be reached is the host's fault, never the requirements' (build_steps.install_faults):
it is not a refusal, the run goes on and the install step judges it as it always did.

A resolution that succeeded is remembered for REUSE_S in the harness cache, keyed by everything
that chooses its answer (the installer's command line, its environment, the interpreter, what the
local wheelhouses hold): the next run with the same inputs within minutes (a rerun after a fix, the
selftests' hundred child runs) reuses it instead of downloading onnxruntime's wheels again for a
dry run (5 to 10 s a run). Only a success is reused: a refusal or a "not checked" is asked again
every time. Reusing a success can never pass a wheel: the install step resolves the same
requirements again, for real, and judges what it finds.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import sandbox
from .cuda_root import default_cache_dir
from .install_faults import environment_fault
from .venv import clean_env, index_args, local_index_dirs, pip_options, uv_options

#: The longest the resolution may take (sdists may be built); past it, the run goes on unchecked.
TIMEOUT_S = 600.0
#: How much of the installer's reason the refusal line carries.
REASON_CHARS = 600
#: How long a successful resolution is reused by later runs with the same inputs (seconds).
REUSE_S = 600.0
#: The variables that differ per run but choose nothing about a resolution (the selftests' child
#: runs each have their own HOME and TMPDIR), and the harness's own (each run's id and temporary
#: dir, a selftest's process mark; no installer reads them): left out of the reuse key.
PER_RUN_ENV = frozenset({"HOME", "TMPDIR", "TMP", "TEMP", "PWD", "OLDPWD"})
HARNESS_ENV_PREFIXES = ("MXNET_HARNESS_", "HARNESS_")


@dataclass(frozen=True)
class Resolution:
    """What the preflight found. ``refusal``: the one line that refuses the run ("" unless the
    requirements cannot be resolved); ``not_checked``: why the preflight could not say (the host's
    fault: the run goes on, "" when it could); ``resolved``: the installer's output when it could."""
    installer: str
    requirements: tuple[str, ...]
    seconds: float
    refusal: str = ""
    not_checked: str = ""
    resolved: str = ""
    #: seconds since the resolution this one reuses (None: resolved by this run)
    reused_age: float | None = None


def where(find_links: Iterable[str | Path] = (), index_url: str | None = None, no_index: bool = False) -> str:
    """The run's index options as the user gave them (the refusal names them)."""
    parts = [f"--find-links={link}" for link in find_links]
    if index_url:
        parts.append(f"--index-url={index_url}")
    if no_index:
        parts.append("--no-index")
    elif not index_url:
        parts.append("the default index (PyPI)")
    return " ".join(parts)


def command(python: str, requirements: Iterable[str], index: list[str]) -> tuple[str, list[str], str | None]:
    """(installer, argv, stdin) that resolve ``requirements`` for ``python`` without installing.

    uv: ``uv pip compile`` (requirements on stdin) for that interpreter; pip: this process's pip
    (``--python`` the interpreter when it is another) ``install --dry-run --ignore-installed``,
    which resolves as a fresh venv's install would and reports what it would install."""
    uv = shutil.which("uv")
    if uv:
        return "uv", [uv, "pip", "compile", *uv_options(), "--python", python, "--no-header", *index, "-"], \
            "\n".join(requirements) + "\n"
    target = [] if Path(python).resolve() == Path(sys.executable).resolve() else ["--python", python]
    # one retry, not pip's five with backoff: on a host whose network drops packets the check would
    # otherwise hold every run for minutes, where it only says "not checked" and goes on
    return "pip", [sys.executable, "-m", "pip", "--isolated", *target, "install", "--dry-run", "--ignore-installed",
                   "--report", "-", "--quiet", "--retries", "1", *pip_options(), *index, *requirements], None


def _interpreter(python: str | None) -> str:
    """The venv's interpreter as a path (create_venv takes a name too: found on PATH as uv would)."""
    python = python or sys.executable
    if "/" in python:
        return str(Path(python).absolute())
    return shutil.which(python) or python


def reason(output: str) -> str:
    """The installer's reason, in one line: its error lines, without uv's box drawing."""
    lines = []
    for line in output.splitlines():
        text = re.sub(r"^[\s×╰─▶│]+", "", line).strip()
        text = re.sub(r"^(error|cause|hint):\s*", "", text, flags=re.I)
        if text and not text.startswith(("WARNING:", "Resolved ", "DEPRECATION:", "[notice]")):
            lines.append(text)
    said = " ".join(lines).rstrip(".") or "(the installer said nothing)"
    return said if len(said) <= REASON_CHARS else said[:REASON_CHARS - 3] + "..."


def reuse_key(cmd: list[str], stdin: str | None, env: dict[str, str], python: str,
              local_dirs: Iterable[Path]) -> str:
    """What chooses a resolution's answer, hashed: the installer's argv and stdin, its environment
    but the per-run dirs, the interpreter file, and each local wheelhouse's or index's files (name,
    size, mtime): a wheel added or removed there is a new key."""
    interp = Path(python).resolve()
    st = interp.stat() if interp.exists() else None
    listing = []
    for root in sorted(map(str, local_dirs)):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                try:
                    fst = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                listing.append((os.path.join(dirpath, name), fst.st_size, fst.st_mtime_ns))
    material = {"cmd": list(map(str, cmd)), "stdin": stdin,
                "env": sorted((k, v) for k, v in env.items()
                              if k not in PER_RUN_ENV and not k.startswith(HARNESS_ENV_PREFIXES)),
                "python": [str(interp), st.st_size if st else None, st.st_mtime_ns if st else None],
                "local": listing}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def _reuse_dir() -> Path:
    return default_cache_dir() / "requirements-preflight"


def _reused(key: str, now: float) -> float | None:
    """The age of a success recorded under ``key`` less than REUSE_S ago, else None."""
    try:
        when = float(json.loads((_reuse_dir() / f"{key}.json").read_text())["resolved_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    age = now - when
    return age if 0 <= age < REUSE_S else None


def _remember(key: str, now: float) -> None:
    """Record a success under ``key`` (atomically), and drop the records past REUSE_S. A cache
    that cannot be written only costs the next run its reuse."""
    folder = _reuse_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"resolved_at": now}))
        os.replace(tmp, folder / f"{key}.json")
        for old in folder.glob("*.json"):
            try:
                if now - old.stat().st_mtime > REUSE_S:
                    old.unlink()
            except OSError:
                pass
    except OSError:
        pass


def check(requirements: Iterable[str], *, python: str | None = None, find_links: Iterable[str | Path] = (),
          index_url: str | None = None, no_index: bool = False, pass_env: Iterable[str] = (),
          timeout: float = TIMEOUT_S) -> Resolution:
    """Resolve ``requirements`` against the run's index options for the venv's interpreter."""
    reqs = tuple(dict.fromkeys(requirements))
    # absolute: the sandbox starts elsewhere than this process (as venv.install does)
    links = [link if "://" in str(link) else Path(link).resolve() for link in find_links]
    installer, cmd, stdin = command(_interpreter(python), reqs, index_args(links, index_url, no_index))
    what = where(find_links, index_url, no_index)
    start = time.monotonic()
    child_env = clean_env(pass_env=tuple(pass_env), pip=True)
    key = reuse_key(cmd, stdin, child_env, _interpreter(python), local_index_dirs(find_links, index_url))
    age = _reused(key, time.time())
    if age is not None:
        return Resolution(installer, reqs, 0.0, reused_age=age)

    def done(refusal: str = "", not_checked: str = "", resolved: str = "") -> Resolution:
        return Resolution(installer, reqs, time.monotonic() - start, refusal=refusal, not_checked=not_checked,
                          resolved=resolved)

    # as the install's box (venv.install_box) without a venv; started in the sandbox's private /tmp
    # (else in the first writable dir, a cache, which uv refuses as a project dir)
    try:
        argv, env = sandbox.wrap(cmd, child_env,
                                 writable=sandbox.installer_caches(),
                                 readable=local_index_dirs(find_links, index_url), network=True, cwd="/tmp")
        proc = subprocess.run(list(map(str, argv)), input=stdin, capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=tempfile.gettempdir())
    except FileNotFoundError as exc:
        return done(not_checked=f"{installer} could not be started ({exc})")
    except subprocess.TimeoutExpired:
        return done(not_checked=f"{installer} did not resolve them within {timeout:.0f} s")
    output = proc.stdout + "\n" + proc.stderr
    if proc.returncode == 0:
        _remember(key, time.time())
        return done(resolved=proc.stdout)
    fault = environment_fault(output)
    if fault is not None:
        return done(not_checked=f"{fault} from {what}")
    return done(refusal=(
        f"the requirements the venv installs beside the wheel ({', '.join(reqs)}) cannot be resolved from "
        f"{what} for {_interpreter(python)} ({installer}): {reason(proc.stderr or proc.stdout)}. "
        "Add what is missing to the wheelhouse or index, or change --extra-requirement; nothing was "
        "configured or compiled"))
