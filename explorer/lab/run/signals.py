"""SIGHUP and SIGTERM do what q and Ctrl-C do: cancel, undo, stop pgwx's server, then exit.

A dropped SSH session (SIGHUP) or a kill (SIGTERM) must not leave fsync off on a server, so
both front ends catch them with `TerminatingSignals`: the first one received is remembered
(the process then exits with 128 + it), and while an event loop listens it is handed to that
loop's callback (the CLI cancels its run, the app quits the way q does). With nobody
listening — the server starting or stopping in a thread — a signal is only remembered, since
cutting that short would leave a server nobody stops; the front end acts on it afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

TERMINATING_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
"""Signals that end pgwx the careful way (a dropped SSH session, a kill)."""


class TerminatingSignals:
    """Catches SIGHUP and SIGTERM for one front end, from `install` to `uninstall`."""

    def __init__(self) -> None:
        self.received: int | None = None
        """The first terminating signal received (None: none yet)."""
        self._listener: tuple[asyncio.AbstractEventLoop, Callable[[int], object]] | None = None
        self._previous: dict[int, Any] = {}

    @property
    def exit_status(self) -> int:
        """128 + the signal, as a shell reports a process the signal ended."""
        assert self.received is not None
        return 128 + self.received

    @property
    def name(self) -> str:
        """SIGHUP or SIGTERM."""
        assert self.received is not None
        return signal.Signals(self.received).name

    def install(self) -> bool:
        """Catch the signals from now on; False where that is impossible (not the main thread)."""
        try:
            for signo in TERMINATING_SIGNALS:
                self._previous.setdefault(signo, signal.getsignal(signo))
                signal.signal(signo, self._on_signal)
        except ValueError:  # only the main thread may set handlers (tests run apps elsewhere)
            self.uninstall()
            return False
        return True

    def uninstall(self) -> None:
        """Give the signals back to whoever had them before `install`."""
        self._listener = None
        for signo, handler in self._previous.items():
            with contextlib.suppress(ValueError):
                signal.signal(signo, signal.SIG_DFL if handler is None else handler)
        self._previous.clear()

    @contextlib.contextmanager
    def installed(self) -> Iterator[TerminatingSignals]:
        """`install` for the length of a `with`."""
        self.install()
        try:
            yield self
        finally:
            self.uninstall()

    def listen(self, callback: Callable[[int], object]) -> None:
        """Hand every signal from now on to `callback`, on the running event loop."""
        self._listener = (asyncio.get_running_loop(), callback)

    @contextlib.contextmanager
    def listening(self, callback: Callable[[int], object]) -> Iterator[None]:
        """`listen` for the length of a `with`; after it, signals are only remembered."""
        self.listen(callback)
        try:
            yield
        finally:
            self._listener = None

    def _on_signal(self, signo: int, _frame: object) -> None:
        # Python runs this in the main thread between two bytecodes, possibly in the middle
        # of the loop's own work: only remember, and let the loop call back when it is ready.
        self.received = self.received or signo
        if self._listener is not None:
            loop, callback = self._listener
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(callback, signo)
