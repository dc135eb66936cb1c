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
"""
from __future__ import annotations

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
from .install_faults import environment_fault
from .venv import clean_env, index_args, local_index_dirs, pip_options, uv_options

#: The longest the resolution may take (sdists may be built); past it, the run goes on unchecked.
TIMEOUT_S = 600.0
#: How much of the installer's reason the refusal line carries.
REASON_CHARS = 600


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

    def done(**kw: str) -> Resolution:
        return Resolution(installer, reqs, time.monotonic() - start, **kw)

    # as the install's box (venv.install_box) without a venv; started in the sandbox's private /tmp
    # (else in the first writable dir, a cache, which uv refuses as a project dir)
    try:
        argv, env = sandbox.wrap(cmd, clean_env(pass_env=tuple(pass_env), pip=True),
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
        return done(resolved=proc.stdout)
    fault = environment_fault(output)
    if fault is not None:
        return done(not_checked=f"{fault} from {what}")
    return done(refusal=(
        f"the requirements the venv installs beside the wheel ({', '.join(reqs)}) cannot be resolved from "
        f"{what} for {_interpreter(python)} ({installer}): {reason(proc.stderr or proc.stdout)}. "
        "Add what is missing to the wheelhouse or index, or change --extra-requirement; nothing was "
        "configured or compiled"))
