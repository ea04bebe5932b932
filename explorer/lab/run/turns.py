"""Several servers in one run take turns, trial by trial (`pgwx run --pg 15 --pg 18`).

One `Runner` per server keeps its own session, undo journal and scope; the `Turnstile` makes
them alternate — server A's trial, server B's, A's, B's … — as the variants of one server
alternate, so drift of the machine (another job, a warming cache, thermal throttling) falls on
every server alike. Preparing data and winding down take a turn too: neither runs while another
server is being measured. A runner that is done (finished, failed, cancelled) leaves, and the
others go on taking turns among themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Turnstile:
    """Lets one of `count` runners work at a time, in the order 0, 1, …, count - 1, 0, 1 …

    Args:
        count: How many runners take turns.
    """

    def __init__(self, count: int) -> None:
        self._active = list(range(count))
        self._current = 0
        self._changed = asyncio.Condition()
        self.order: list[int] = []
        """Who took each turn, in order (what the tests and the narration read)."""

    def _advance(self, after: int) -> None:
        """The next runner still taking turns after `after` (wrapping round)."""
        if not self._active:
            return
        later = [i for i in self._active if i > after]
        self._current = later[0] if later else self._active[0]

    @asynccontextmanager
    async def turn(self, who: int) -> AsyncIterator[None]:
        """Wait for `who`'s turn, hold it for the block, then pass it on."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._current == who or who not in self._active)
        self.order.append(who)
        try:
            yield
        finally:
            async with self._changed:
                self._advance(who)
                self._changed.notify_all()

    async def leave(self, who: int) -> None:
        """`who` takes no more turns; if it was its turn, the next runner's begins."""
        async with self._changed:
            if who in self._active:
                self._active.remove(who)
                if self._current == who:
                    self._advance(who)
            self._changed.notify_all()
