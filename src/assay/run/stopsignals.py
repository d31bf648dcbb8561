"""Stopping a run loop: SIGINT, SIGTERM and SIGHUP become a ``StopRequested`` (a
KeyboardInterrupt carrying the signal) where Ctrl-C's would be raised, except while a job's
records are being written (``deferred``), where the signal waits until they are."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequested(KeyboardInterrupt):
    """A stop signal, raised where Ctrl-C's KeyboardInterrupt would be (and caught alike)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop_reason(signum: int) -> str:
    return "stopped by Ctrl-C" if signum == signal.SIGINT else (
        f"stopped by {signal.Signals(signum).name}"
    )  # fmt: skip


class _StopSignals:
    """SIGINT/SIGTERM/SIGHUP → StopRequested, except inside ``deferred()`` (records being
    written), where the signal waits; after the first, further signals change nothing."""

    def __init__(self) -> None:
        self.deferring = 0
        self.pending: int | None = None
        self.received: int | None = None
        self._saved: dict[int, object] = {}

    def _handler(self, signum: int, _frame) -> None:
        if self.received is not None:
            return
        self.received = signum
        if self.deferring:
            self.pending = signum
            return
        raise StopRequested(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        try:
            for sig in STOP_SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread: signals stay as they were
            self._saved.clear()
        try:
            yield
        finally:
            for sig, old in self._saved.items():
                signal.signal(sig, old)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring += 1
        try:
            yield
        finally:
            self.deferring -= 1
        if not self.deferring and self.pending is not None:
            signum, self.pending = self.pending, None
            raise StopRequested(signum)


STOP = _StopSignals()


def stop_signals():
    """Install the stop handlers for a run loop (``execute``, ``repeat_auto``): SIGTERM and
    SIGHUP then stop a run as Ctrl-C does (KeyboardInterrupt carrying ``signum``)."""
    STOP.received = STOP.pending = None
    return STOP.installed()


def stop_received() -> int:
    """The stop signal received in this run loop (SIGINT when a plain Ctrl-C raised)."""
    return STOP.received or signal.SIGINT
