"""`explorer.server.connect`: what connecting raises becomes one sentence only when it is the
server's or the user's doing; a bug in pgwx stays a bug (issue 36: no bug turned into advice)."""

from __future__ import annotations

import pytest

from explorer.server.connect import ConnectError, Target


async def test_nothing_listening_is_one_sentence() -> None:
    target = Target(dsn="postgresql:///x?host=/nonexistent-pgwx")
    with pytest.raises(ConnectError, match="Nothing is listening at"):
        await target.connect("admin", timeout=2)


async def test_a_programming_error_is_not_turned_into_advice() -> None:
    target = Target(dsn="postgresql:///x?host=/nonexistent-pgwx")
    with pytest.raises(TypeError):  # a wrong type handed in by pgwx's own code
        await target.connect("admin", timeout="soon")  # type: ignore[arg-type]
