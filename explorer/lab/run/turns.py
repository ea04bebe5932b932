"""Several servers in one run take turns, trial by trial (`pgwx run --pg 15 --pg 18`).

One `Runner` per server keeps its own session, undo journal and scope; the `Turnstile` makes
them alternate — server A's trial, server B's, A's, B's … — as the variants of one server
alternate, so drift of the machine (another job, a warming cache, thermal throttling) falls on
every server alike. Preparing data and winding down take a turn too: neither runs while another
server is being measured. A runner that is done (finished, failed, cancelled) leaves, and the
others go on taking turns among themselves.

With auto repeats the runners also meet at the end of every round (`gather`) to agree on the
next one, so every server runs the same rounds of the same variants. A runner waiting there is
parked: when the turn is a parked runner's, the next runner that is not parked may take one
out of order (one server may have a trial more in a round, say a variant the other cannot
run), and the turn stays where it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Any


class Turnstile:
    """Lets one of `count` runners work at a time, in the order 0, 1, …, count - 1, 0, 1 …

    Args:
        count: How many runners take turns.
    """

    def __init__(self, count: int) -> None:
        self._active = list(range(count))
        self._current = 0
        self._parked: set[int] = set()
        self._posts: dict[Hashable, dict[int, Any]] = {}
        self._changed = asyncio.Condition()
        self.order: list[int] = []
        """Who took each turn, in order (what the tests and the narration read)."""

    def _next(self, who: int) -> int:
        """The next active runner after `who`, parked or not (`who` itself when alone)."""
        after = self._after(who)
        return who if after is None else after

    def _after(self, who: int, skip_parked: bool = False) -> int | None:
        """The next active runner after `who` (wrapping round), parked ones skipped if asked."""
        ring = [i for i in self._active if not (skip_parked and i in self._parked)]
        if not ring:
            return None
        later = [i for i in ring if i > who]
        return later[0] if later else ring[0]

    def _may_go(self, who: int) -> bool:
        """It is `who`'s turn, or the turn is a parked runner's and `who` comes next."""
        if who not in self._active or self._current == who:
            return True
        return self._current in self._parked and self._after(self._current, True) == who

    @asynccontextmanager
    async def turn(self, who: int) -> AsyncIterator[None]:
        """Wait for `who`'s turn, hold it for the block, then pass it on."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._may_go(who))
            in_order = self._current == who
        self.order.append(who)
        try:
            yield
        finally:
            async with self._changed:
                if in_order:
                    self._current = self._next(who)
                self._changed.notify_all()

    def _meet(self) -> None:
        """Unpark, all at once, the runners of every meeting everyone active has reached."""
        for key, posts in list(self._posts.items()):
            if all(i in posts for i in self._active):
                self._parked -= set(posts)
                del self._posts[key]

    async def gather(self, who: int, key: Hashable, value: Any) -> dict[int, Any]:
        """Post `value` for meeting `key` and wait until every active runner has posted.

        Returns:
            Runner → what it posted, for every runner that took part.
        """
        async with self._changed:
            posts = self._posts.setdefault(key, {})
            posts[who] = value
            self._parked.add(who)
            self._meet()
            self._changed.notify_all()
            await self._changed.wait_for(lambda: who not in self._parked)
            return dict(posts)

    async def leave(self, who: int) -> None:
        """`who` takes no more turns; if it was its turn, the next runner's begins."""
        async with self._changed:
            if who in self._active:
                if self._current == who:
                    self._current = self._next(who)
                self._active.remove(who)
                self._parked.discard(who)
                self._meet()  # the others need not wait for it at a meeting
            self._changed.notify_all()
