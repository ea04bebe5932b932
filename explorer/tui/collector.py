"""Python's full collections, moved out of the way of a key.

A full (generation 2) collection walks every object the app keeps that start-up did not
freeze: during a live matrix that is 40–60 ms, and twice that beside a CPU-bound process. Python
starts one when allocation crosses its threshold, and a key's work allocates most: in a live
matrix at 100x30, six full passes of six began within 150 ms after a key, each adding its
pause to that key's time on screen. Python is told not to start them; the app starts them when
one is due (as many generation-1 passes since the last as Python itself would wait for):
just after a key's screen update has gone out (the user looks at it; the next key comes
later), or in a quiet moment with no key for `QUIET` seconds. When keys never stop, a pass
`OVERDUE` times late is made anyway: garbage never piles up for long.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

QUIET = 0.5
"""Seconds without a key after which a due collection is made (checked every `TICK`)."""
TICK = 0.5
"""Seconds between the quiet-moment checks."""
AFTER_KEY = 0.05
"""Seconds after a key's screen update before a due collection: the terminal's writer thread
sends the frame first (a collection holds the interpreter)."""
OVERDUE = 5
"""A due collection this many times late is made even while keys keep coming."""
NEVER = 1_000_000_000
"""Generation 2's threshold while the app decides: Python never reaches it."""

_holder: QuietCollector | None = None
"""The collector that has Python's thresholds now (one at a time in a process)."""


class QuietCollector:
    """Full collections when nobody waits for the screen.

    `install` freezes what start-up built (it lives as long as the app) and takes full
    collections over from Python; `uninstall` gives both back. The app calls `key_pressed` for
    each key, `after_key` once that key's screen update has gone out, and `tick` every `TICK`
    seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self._keys = 0
        self._last_key = float("-inf")
        self.made: list[str] = []
        """Why each full collection it made was made: "after key", "quiet" or "overdue"."""

    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self) -> None:
        """Freeze what start-up built (after a collection, so no garbage is frozen with it) and
        keep Python from starting full collections."""
        global _holder
        if self._saved is not None:
            return
        if _holder is not None:
            # An earlier app's collector never gave them back (an app that did not unmount):
            # Python's own thresholds are what it saved, not the NEVER it set.
            _holder.uninstall()
        _holder = self
        gc.collect()
        gc.freeze()
        self._saved = gc.get_threshold()
        gc.set_threshold(self._saved[0], self._saved[1], NEVER)

    def uninstall(self) -> None:
        """Python's thresholds back, the frozen objects back to the collector (tests run many
        apps in one process)."""
        global _holder
        if self._saved is None:
            return
        if _holder is self:
            _holder = None
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()

    def due(self) -> bool:
        """As many generation-1 passes since the last full one as Python would wait for."""
        return self._saved is not None and gc.get_count()[2] > self._saved[2]

    def overdue(self) -> bool:
        return self._saved is not None and gc.get_count()[2] > self._saved[2] * OVERDUE

    def key_pressed(self) -> int:
        """A key arrived; returns its number, for `after_key`."""
        self._keys += 1
        self._last_key = self._clock()
        return self._keys

    def after_key(self, key: int) -> bool:
        """Key `key`'s screen update has gone out: collect if due and no key came since."""
        if key != self._keys or not self.due():
            return False
        return self._collect("after key")

    def tick(self) -> bool:
        """Collect if due and no key for `QUIET` seconds, or if overdue."""
        if self.overdue():
            return self._collect("overdue")
        if self.due() and self._clock() - self._last_key >= QUIET:
            return self._collect("quiet")
        return False

    def _collect(self, why: str) -> bool:
        gc.collect()
        self.made.append(why)
        return True
