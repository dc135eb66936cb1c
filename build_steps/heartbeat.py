"""A quiet step's pulse: every few seconds, how long it has run and the last line of its log.

pip resolving and downloading a wheel's requirements prints nothing to the terminal for a minute
or more (its output goes to the step's log); without a pulse a 75 s install looks hung.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .errors import log_tail

#: Seconds between two pulses.
EVERY = 10.0


@contextmanager
def heartbeat(label: str, log: Path, say: Callable[[str], object], every: float = EVERY) -> Iterator[None]:
    """While the body runs, ``say("[label] 20s: <last log line>")`` every ``every`` seconds."""
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            last = log_tail(Path(log), 1).strip()[:100]
            try:
                say(f"[{label}] {time.monotonic() - start:.0f}s" + (f": {last}" if last else ""))
            except (OSError, ValueError):
                return  # a closed terminal
    thread = threading.Thread(target=beat, name=f"{label}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
