"""SIGTERM and SIGINT for the console tools, as Kafka's shutdown hook handles them: the
command stops at its next safe point and closes its client (a consumer commits what it
printed and leaves its group; a producer delivers what it can and reports), instead of
dying mid-way and leaving a group member to time out.

A signal sets a flag the command checks at its safe points, so no exception lands between
printing a record and noting it for the commit. A wait that can be left at any moment
(reading stdin, waiting for deliveries) is marked `interruptible()`: a signal that comes
during it also raises `Interrupted` there. So a producer's first signal stops its input,
and one during the flush that follows gives up waiting for what is undelivered. After the
second signal the defaults are back, so a third ends the process at once.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator, Optional

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(BaseException):
    """A stop was asked while the command was blocked in an interruptible wait.
    A BaseException, like KeyboardInterrupt: no `except Exception` swallows it."""


class StopSignals:
    def __init__(self) -> None:
        self.signal_name: Optional[str] = None  # of the first signal received
        self._received = 0
        self._interruptible = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopSignals":
        # Python runs handlers on the main thread only; elsewhere (a test runner's
        # thread) the command runs as before, stopped by its caller.
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous = {}

    @property
    def stopping(self) -> bool:
        return self._received > 0

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self._received += 1
        if self.signal_name is None:
            self.signal_name = signal.Signals(signum).name
        if self._received >= 2:
            for sig in self._previous:
                signal.signal(sig, signal.SIG_DFL)
        if self._interruptible:
            raise Interrupted

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A wait the next signal cuts short by raising Interrupted."""
        self._interruptible = True
        try:
            yield
        finally:
            self._interruptible = False

    def until_stopped(self, lines: Iterator[bytes]) -> Iterator[bytes]:
        """`lines` until they end or a stop is asked, even while waiting for the next one."""
        while not self.stopping:
            try:
                with self.interruptible():
                    line = next(lines)
            except (StopIteration, Interrupted):
                return
            yield line
