"""A run's signals are interrupts (harness.plugins.supervision installs these handlers for the run).

SIGINT, SIGTERM and SIGHUP end the run as Ctrl-C does: the build step stops its processes and
the summary says where it stopped. Python's default for SIGTERM and SIGHUP kills pytest outright
and leaves ninja and the compilers running (a closed terminal is a SIGHUP); and a shell starts a
background job (``pytest … &`` in a script, a CI step) with SIGINT *ignored*, so an explicit
``kill -INT`` would do nothing. Only the first signal interrupts: a second or third Ctrl-C while
the build is being stopped, or while the summary is written, is absorbed (pytest's own handling
would print a KeyboardInterrupt traceback and exit 130 instead of one summary and exit 2).
"""
from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any, Callable, Union

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: what signal.getsignal returns and signal.signal takes
_Handler = Union[Callable[[int, Union[FrameType, None]], Any], int, signal.Handlers, None]


class Interrupts:
    """The run's signal handlers: the first signal raises KeyboardInterrupt, later ones count."""

    def __init__(self) -> None:
        self.first: str | None = None
        self.absorbed = 0
        self.previous: dict[signal.Signals, _Handler] = {}

    def handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.first is not None:
            self.absorbed += 1
            if self.absorbed == 1:
                try:
                    print(f"\n(already stopping after {self.first}: {name} ignored; the summary follows)",
                          file=sys.__stderr__ or sys.stderr, flush=True)
                except (OSError, ValueError):
                    pass  # a closed terminal
            return
        self.first = name
        raise KeyboardInterrupt("" if signum == signal.SIGINT else f"signal {name}")

    def install(self) -> None:
        for sig in INTERRUPTS:
            current = signal.getsignal(sig)
            # a handler someone else installed (a debugger, an embedding tool) is left alone
            if current in (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler):
                self.previous[sig] = current
                signal.signal(sig, self.handle)

    def restore(self) -> None:
        for sig, old in self.previous.items():
            if signal.getsignal(sig) == self.handle:
                signal.signal(sig, old)
        self.previous.clear()
