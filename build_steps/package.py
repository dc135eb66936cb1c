"""Package the staged tree: ``python -m build --wheel --no-isolation`` in python/, then dist/.

setuptools' own python/build/ is removed first: the fork never cleaned it (docs/background.md, G12), so files of
an earlier build (a stale mxnet/lib/ closure) could leak into the new wheel. The wheel is built
into a staging directory; it reaches <mxnet-src>/dist/ only through publish_to_dist(), after the
gates passed, and a wheel that failed them is kept aside under a name that says so.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Container

from . import atomic, filesystem, processes, reproducible, sandbox, tree_links
from .step_record import record_step
from .own_files import open_log
from .errors import EnvironmentFault, GitError, ReleasedWheel, StepError, log_tail
from .once import JsonRecord
from .profile_data import Profile
from .venv import clean_env


@dataclass
class PackageResult(JsonRecord):
    wheel: Path
    seconds: float
    log: Path
    #: the version the wheel was built with, and the dist/ it goes to once the gates passed (the
    #: chain's package row files them with the record: harness.steps)
    version: str = ""
    dist: Path | None = None


def clean_setuptools_state(python_dir: Path) -> None:
    for stale in [python_dir / "build", *python_dir.glob("*.egg-info")]:
        if stale.is_dir():
            shutil.rmtree(stale)


def stage_tree(src: Path, dest: Path) -> Path:
    """A tree the package is staged and built in, under the build dir: a fresh copy of
    ``src/python`` (which setup.py, setuptools and the staging write into), beside links to
    every other top-level entry of ``src`` (setup.py reads ``../include``, ``../3rdparty``). Symlinks
    inside ``src/python`` are followed within ``src`` only (build_steps.tree_links).
    The source tree itself is only read; two build dirs of one tree never share a staging dir."""
    src, dest = Path(src), Path(dest)
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__")
    # The tree's own links (python/mxnet/space.py -> ../../contrib/tvmop/space.py) are followed, so the
    # staged copy holds their content; one that leaves the tree is refused before anything changes.
    tree_links.check_links(src / "python", src, "package", ignore)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in dest.iterdir():
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
        else:
            shutil.rmtree(entry)
    tree_links.copy_following_links(src / "python", dest / "python", src, "package", ignore)
    for entry in src.iterdir():
        if entry.name != "python":
            (dest / entry.name).symlink_to(entry)
    return dest


def build_wheel(src: Path, version: str, profile: Profile, staging_dir: Path, log_dir: Path,
                python: str, commit_of: Path | None = None) -> PackageResult:
    """The wheel of ``src/python`` (a stage_tree) into ``staging_dir``; ``commit_of``: the
    source tree whose commit dates the wheel (default ``src``)."""
    src, staging_dir, log_dir = Path(src), Path(staging_dir), Path(log_dir)
    python_dir = src / "python"
    clean_setuptools_state(python_dir)
    if staging_dir.exists():
        shutil.rmtree(staging_dir)
    staging_dir.mkdir(parents=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "package.log"
    # The tree's setup.py is the wheel's own code: the allow-list environment (no secrets), as
    # for every child that runs it (build_steps.venv.clean_env).
    env = {**clean_env(pip=True), "MXNET_PACKAGE_VERSION": version, **profile.setup_env,
           "MXNET_SETUP_SKIP_AUTOCOMPLETE": "1"}
    epoch = reproducible.source_date_epoch(Path(commit_of or src))
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = str(epoch)  # the same commit gives the same wheel bytes
    cmd = [python, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(staging_dir)]
    start = time.monotonic()
    with open_log(log, "w") as fh:  # never through a link the build planted (build_steps.own_files)
        fh.write("$ " + " ".join(cmd) + f"   (in {python_dir})\n")
        fh.write("".join(f"  {k}={env[k]}\n" for k in sorted(profile.setup_env) + ["MXNET_PACKAGE_VERSION"]))
        fh.write(f"  SOURCE_DATE_EPOCH={env.get('SOURCE_DATE_EPOCH', '(unset)')}\n")
        fh.flush()
        argv, child_env = sandbox.wrap(cmd, env, readable=[src], writable=[python_dir, staging_dir],
                                       cwd=python_dir)
        rc = processes.run(argv, cwd=python_dir, stdout=fh, stderr=subprocess.STDOUT, env=child_env)
    seconds = time.monotonic() - start
    record_step(staging_dir, "package", version)
    if rc != 0:
        tail = log_tail(log)
        if filesystem.disk_was_full(staging_dir, tail):
            raise EnvironmentFault("package", f"python -m build --wheel failed: {filesystem.no_space(staging_dir)}",
                            log=log, tail=tail)
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
    note = reproducible.make_reproducible(wheels[0], epoch)
    with open_log(log, "a") as fh:
        fh.write(f"reproducible: {note}\n")
    return PackageResult(wheel=wheels[0], seconds=seconds, log=log)


def released_tag(src: Path, version: str, remote_tags: Container[str] = ()) -> str | None:
    """The tag ``v<version>`` when it exists in ``src`` (locally) or among ``remote_tags``."""
    from . import gitops
    tag = f"v{version}"
    if tag in remote_tags:
        return tag
    try:
        return tag if gitops.is_git_repo(src) and gitops.local_tag_exists(src, tag) else None
    except GitError:
        return None


def publish_to_dist(wheel: Path, dist_dir: Path, *, sha256: str | None = None,
                    src: Path | None = None, remote_tags: Container[str] = ()) -> Path:
    """Copy a wheel that passed its gates into dist/, all or nothing (build_steps.atomic).

    ``sha256`` is the run's pin: the bytes copied must be the bytes the gates judged. A wheel of
    the same name already in dist/ with other bytes is replaced, unless its version is tagged in
    ``src`` (or on the remote): then this refuses, since a released wheel is never rewritten.
    """
    from .pinning import sha256_of
    from .publish import wheel_version
    dest = Path(dist_dir) / Path(wheel).name
    if dest.exists() and sha256 is not None and sha256_of(dest) == sha256:
        return dest  # already there, byte for byte
    if dest.exists() and src is not None:
        tag = released_tag(src, wheel_version(dest), remote_tags)
        if tag:
            raise ReleasedWheel(
                f"{dest} is the wheel of release {tag} (the tag exists) and this run built other "
                f"bytes for the same version; a released wheel is never overwritten, so dist/ was "
                "left as it is. Build a new version (--wheel-version with a higher build number), "
                "or move the released wheel away first if you really mean to replace it")
    return atomic.copy_verified(wheel, dest, sha256)


def reject_wheel(wheel: Path, dist_dir: Path) -> Path:
    """Keep a wheel that failed its gates aside, under a name no installer takes for a wheel."""
    dest = Path(dist_dir) / "rejected" / (Path(wheel).name + ".FAILED-GATES")
    return atomic.copy_file(wheel, dest)
