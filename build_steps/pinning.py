"""One set of bytes per run: the wheel is copied once, when the run starts (or when it is built),
into a run-private, read-only directory, and hashed while it is copied. Extraction, the venv
install, dist/, the release upload and its notes read only that copy, checking its hash first.

A copy, not a link: a hard link shares the user's inode, so a wheel rewritten in place (during
``pip install``, say, and restored afterwards) would change the bytes the run installs while the
checks before and after see the original. The copy cannot be reached through the user's path;
a wheel replaced or rewritten at that path is still reported at the end of the run.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .errors import WheelChanged
from .once import JsonRecord

_BLOCK = 1 << 20
#: the pin's directory while the run uses it (owner read/search only) and afterwards (removable)
_LOCKED, _UNLOCKED = 0o500, 0o700


@dataclass(frozen=True)
class WheelPin(JsonRecord):
    #: where the wheel was named (--wheel) or built
    source: str
    #: the run's private read-only copy every step reads (same name as the source)
    path: str
    sha256: str
    size: int
    #: the path as the user named it, symlinks not followed: a --wheel link retargeted during the
    #: run is seen at the end (source is what it pointed to when the run pinned it)
    named: str = ""
    #: stat_signature of the copy and of the source once pinned (None: hash every time)
    copy_stat: list[int] | None = None
    source_stat: list[int] | None = None


def sha256_of(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def stat_signature(path: str | os.PathLike[str]) -> list[int] | None:
    """(device, inode, size, mtime, ctime in ns) of ``path``, or None when it cannot vouch for the
    bytes. The kernel sets a file's ctime on every write, truncate, rename or chmod of it, and no
    system call sets it to a chosen value (utime() sets mtime, and itself moves ctime): a file
    whose signature is unchanged has not been written since. A filesystem with whole-second
    timestamps could hide a write in the same second, so a ctime on a whole second vouches for
    nothing and the file is hashed instead."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_ctime_ns % 1_000_000_000 == 0:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _unchanged(path: str | os.PathLike[str], signature: Iterable[int] | None) -> bool:
    return signature is not None and stat_signature(path) == list(signature)


def pin_wheel(wheel: Path, pin_dir: Path) -> WheelPin:
    """Copy ``wheel`` into a new private directory ``pin_dir`` (mode 0500, the file 0444), hashing
    the bytes as they are written: the pin's sha256 is that of the copy's exact bytes."""
    named = Path(os.path.abspath(wheel))
    wheel = named.resolve()
    pin_dir = Path(pin_dir)
    pin_dir.parent.mkdir(parents=True, exist_ok=True)
    if pin_dir.exists():  # an earlier pin of the same run dir (a retried run-once record)
        os.chmod(pin_dir, _UNLOCKED)
        shutil.rmtree(pin_dir)
    pin_dir.mkdir(mode=_UNLOCKED)
    pinned = pin_dir / wheel.name
    digest, size = hashlib.sha256(), 0
    source_before = stat_signature(wheel)
    with open(wheel, "rb") as src, open(pinned, "xb") as dst:
        for block in iter(lambda: src.read(_BLOCK), b""):
            digest.update(block)
            dst.write(block)
            size += len(block)
    os.chmod(pinned, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.chmod(pin_dir, _LOCKED)
    # The source's signature counts only when the copy saw one unchanged file from start to end.
    source_after = stat_signature(wheel)
    return WheelPin(source=str(wheel), path=str(pinned), sha256=digest.hexdigest(), size=size,
                    named=str(named) if named != wheel else "",
                    copy_stat=stat_signature(pinned),
                    source_stat=source_after if source_after == source_before else None)


def unlock(pin: WheelPin) -> None:
    """Make the pin's directory removable again (the run is over; pytest or the caller deletes it)."""
    directory = Path(pin.path).parent
    if directory.is_dir():
        os.chmod(directory, _UNLOCKED)


def verify(pin: WheelPin, before: str) -> Path:
    """The pinned file, after checking it still hashes to the pin; ``before`` names the step.
    A copy whose stat signature is the one it had when pinned was not written since: its hash
    is the pin's without reading ~0.5 GB again (two full reads per run saved, issue 32)."""
    if _unchanged(pin.path, pin.copy_stat):
        return Path(pin.path)
    now = sha256_of(pin.path)
    if now != pin.sha256:
        raise WheelChanged(
            f"the wheel changed during the run, before {before}: {Path(pin.source).name} was "
            f"pinned as sha256 {pin.sha256} when the run started, the run's private copy "
            f"{pin.path} now hashes to {now} (something changed it in place). Nothing further "
            "uses it; run again on a machine where nothing writes into the run's temporary dir")
    return Path(pin.path)


def source_changed(pin: WheelPin) -> str | None:
    """Why the wheel at its original path is no longer the pinned one (None when it still is)."""
    src = Path(pin.source)
    if pin.named and Path(pin.named).resolve() != src:
        target = Path(pin.named).resolve()
        now = sha256_of(target) if target.is_file() else "nothing (no such file)"
        return (f"{pin.named} was retargeted during the run: it pointed to {src} (sha256 {pin.sha256}, the "
                f"bytes the gates judged) and now points to {target} ({now}), which was NOT verified")
    if not src.exists():
        return f"{src} was removed during the run (the gates judged sha256 {pin.sha256})"
    if _unchanged(src, pin.source_stat):
        return None
    now = sha256_of(src)
    if now != pin.sha256:
        return (f"{src} was replaced during the run: the gates judged the bytes pinned at the "
                f"start (sha256 {pin.sha256}); the file there now hashes to {now} and was NOT verified")
    return None
