"""Package the staged tree: ``python -m build --wheel --no-isolation`` in python/, then dist/.

setuptools' own python/build/ is removed first: the fork never cleaned it (§16.12), so files of
an earlier build (a stale mxnet/lib/ closure) could leak into the new wheel. The wheel is built
into a staging directory; it reaches <mxnet-src>/dist/ only through publish_to_dist(), after the
gates passed, and a wheel that failed them is kept aside under a name that says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .configure import record_step
from .errors import StepError, log_tail


@dataclass
class PackageResult:
    wheel: Path
    seconds: float
    log: Path

    def to_json(self) -> dict:
        return {"wheel": str(self.wheel), "seconds": self.seconds, "log": str(self.log)}

    @classmethod
    def from_json(cls, d: dict) -> "PackageResult":
        return cls(wheel=Path(d["wheel"]), seconds=d["seconds"], log=Path(d["log"]))


def clean_setuptools_state(python_dir: Path) -> None:
    for stale in [python_dir / "build", *python_dir.glob("*.egg-info")]:
        if stale.is_dir():
            shutil.rmtree(stale)


def build_wheel(src: Path, version: str, profile, staging_dir: Path, log_dir: Path,
                python: str) -> PackageResult:
    src, staging_dir, log_dir = Path(src), Path(staging_dir), Path(log_dir)
    python_dir = src / "python"
    clean_setuptools_state(python_dir)
    if staging_dir.exists():
        shutil.rmtree(staging_dir)
    staging_dir.mkdir(parents=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "package.log"
    env = {**os.environ, "MXNET_PACKAGE_VERSION": version, **profile.setup_env,
           "MXNET_SETUP_SKIP_AUTOCOMPLETE": "1"}
    cmd = [python, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(staging_dir)]
    start = time.monotonic()
    with open(log, "w") as fh:
        fh.write("$ " + " ".join(cmd) + f"   (in {python_dir})\n")
        fh.write("".join(f"  {k}={env[k]}\n" for k in sorted(profile.setup_env) + ["MXNET_PACKAGE_VERSION"]))
        fh.flush()
        proc = subprocess.run(cmd, cwd=python_dir, stdout=fh, stderr=subprocess.STDOUT, env=env)
    seconds = time.monotonic() - start
    record_step(staging_dir, "package", version)
    if proc.returncode != 0:
        tail = log_tail(log)
        hint = ""
        if "No module named build" in tail:
            hint = f"; install the build frontend: {python} -m pip install build wheel setuptools"
        raise StepError("package", f"python -m build --wheel failed in {python_dir}{hint}",
                        log=log, tail=tail)
    wheels = sorted(staging_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise StepError("package", f"expected exactly one wheel in {staging_dir}, found "
                        f"{len(wheels)}: {', '.join(w.name for w in wheels) or 'none'}", log=log,
                        tail=log_tail(log))
    return PackageResult(wheel=wheels[0], seconds=seconds, log=log)


def publish_to_dist(wheel: Path, dist_dir: Path) -> Path:
    """Copy a wheel that passed its gates into dist/ (written atomically: never half a wheel)."""
    dist_dir.mkdir(parents=True, exist_ok=True)
    dest = dist_dir / Path(wheel).name
    tmp = dist_dir / (dest.name + ".partial")
    shutil.copy2(wheel, tmp)
    os.replace(tmp, dest)
    return dest


def reject_wheel(wheel: Path, dist_dir: Path) -> Path:
    """Keep a wheel that failed its gates aside, under a name no installer takes for a wheel."""
    rejected = dist_dir / "rejected"
    rejected.mkdir(parents=True, exist_ok=True)
    dest = rejected / (Path(wheel).name + ".FAILED-GATES")
    shutil.copy2(wheel, dest)
    return dest
