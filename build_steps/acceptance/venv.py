"""The venv the acceptance shards run in: the suite's test requirements installed into it, the
environment and sandbox every shard gets, and the check that ``import mxnet`` there is the
installed wheel (not the source tree's python/)."""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import sandbox
from ..errors import StepError
from ..venv import Venv, clean_env, index_args, install_box, install_failure, local_index_dirs, pip_command

#: What the fork's script exports for every shard (thread caps, unbuffered output, tests told to
#: import the installed mxnet rather than prepend the source python/, quiet pytest output).
FORK_SHARD_ENV = {
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1",
    "PYTHONUNBUFFERED": "1", "MXNET_TEST_USE_INSTALLED_MXNET": "1",
    "PYTEST_ADDOPTS": "-p no:faulthandler --tb=short --color=no --durations=20",
}


def install_test_requirements(venv: Venv, requirements: Iterable[str], *, pins: Iterable[str] = (),
                              find_links: Iterable[str | Path] = (), index_url: str | None = None,
                              no_index: bool = False, log: Path) -> list[str]:
    """pip install the suite's test extras into the venv (once: a stamp file in the venv records
    them). ``pins`` (the user's --extra-requirement) go into the same resolver call so that, e.g.,
    numpy<1.24 for an old wheel survives scipy's install."""
    from filelock import FileLock
    reqs = list(requirements)
    pins = list(pins)
    stamp = Path(venv.root) / ".harness-acceptance-requirements.json"
    want = json.dumps(sorted(reqs + pins))
    with FileLock(str(stamp) + ".lock"):
        if stamp.exists() and stamp.read_text() == want:
            return reqs
        if reqs:
            cmd = pip_command(venv) + index_args(find_links, index_url, no_index) + [*reqs, *pins]
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as fh:
                fh.write("$ " + " ".join(cmd) + "\n")
                fh.flush()
                start = fh.tell()
                argv, child_env = sandbox.wrap(cmd, venv.env(pip=True), **install_box(venv, local_index_dirs(find_links, index_url)))
                proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=child_env,
                                      timeout=3600)
            if proc.returncode != 0:
                # an unreachable index is the host's fault: not judged (build_steps.venv.install_failure)
                raise install_failure("acceptance", "pip install of the acceptance suite's test requirements "
                                      f"{' '.join(reqs)}", log, start, proc.returncode, lines=15)
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


def shard_env(extra: Mapping[str, str] | None = None, pass_env: Iterable[str] = ()) -> dict[str, str]:
    """clean_env plus the fork's exports, minus this harness's own pytest/xdist variables (a shard
    is a pytest of its own: PYTEST_XDIST_WORKER leaking in would make it think it is a worker)."""
    env = {k: v for k, v in clean_env(pass_env=pass_env).items() if not k.startswith("PYTEST_")}
    env.update(FORK_SHARD_ENV)
    env.update(extra or {})
    return env


def shard_box(venv: Venv, source_root: Path, workdir: Path, out_dir: Path | None = None) -> dict[str, Any]:
    """A shard's sandbox (build_steps.sandbox): the venv read-only; the tree writable, as the fork's
    tests write beside themselves, but its .git hidden (hooks and config would run outside the
    sandbox at the user's next git command); its log dir (junit XML) writable; no network."""
    return {"readable": [venv.root], "writable": [source_root, *([out_dir] if out_dir else [])],
            "cwd": workdir, "masked": [Path(source_root) / ".git"]}


def verify_installed_mxnet(venv: Venv, source_root: Path, cwd: str = ".",
                           env: Mapping[str, str] | None = None) -> dict[str, Any]:
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
    facts: dict[str, Any] = json.loads(line.split(" ", 1)[1])
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
