"""One set of bytes per run: the wheel is hashed once, when the run starts (or when it is built),
and every later step reads the pinned file or checks the hash first.

The pin is a hard link (a copy across filesystems) in the run's shared dir: a wheel replaced at
its path (``mv new.whl old.whl``) leaves the pinned bytes as they were, and the run reports the
swap; a wheel rewritten in place changes the pinned bytes too, which the next check refuses.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import HarnessError
from .once import JsonRecord

_BLOCK = 1 << 20


class WheelChanged(HarnessError):
    """The wheel's bytes are no longer those the run pinned."""


@dataclass(frozen=True)
class WheelPin(JsonRecord):
    #: where the wheel was named (--wheel) or built
    source: str
    #: the pinned file every step reads (same name as the source)
    path: str
    sha256: str
    size: int


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def pin_wheel(wheel: Path, pin_dir: Path) -> WheelPin:
    """Link (or copy) ``wheel`` into ``pin_dir`` and hash the pinned file."""
    wheel = Path(wheel).resolve()
    pin_dir = Path(pin_dir)
    pin_dir.mkdir(parents=True, exist_ok=True)
    pinned = pin_dir / wheel.name
    pinned.unlink(missing_ok=True)
    try:
        os.link(wheel, pinned)
    except OSError:
        shutil.copyfile(wheel, pinned)
    return WheelPin(source=str(wheel), path=str(pinned), sha256=sha256_of(pinned),
                    size=pinned.stat().st_size)


def verify(pin: WheelPin, before: str) -> Path:
    """The pinned file, after checking it still hashes to the pin; ``before`` names the step."""
    now = sha256_of(pin.path)
    if now != pin.sha256:
        raise WheelChanged(
            f"the wheel changed during the run, before {before}: {Path(pin.source).name} was "
            f"pinned as sha256 {pin.sha256} when the run started, the bytes now hash to {now} "
            "(it was rewritten in place). Nothing further uses it; run again on a wheel nobody "
            "modifies while the gates run")
    return Path(pin.path)


def source_changed(pin: WheelPin) -> str | None:
    """Why the wheel at its original path is no longer the pinned one (None when it still is)."""
    src = Path(pin.source)
    if not src.exists():
        return f"{src} was removed during the run (the gates judged sha256 {pin.sha256})"
    now = sha256_of(src)
    if now != pin.sha256:
        return (f"{src} was replaced during the run: the gates judged the bytes pinned at the "
                f"start (sha256 {pin.sha256}); the file there now hashes to {now} and was NOT verified")
    return None
