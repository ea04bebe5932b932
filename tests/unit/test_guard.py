"""A wait for a server that does not answer counts down, and ends (issue 20)."""

from __future__ import annotations

import pytest

from explorer.lab.safety.guard import wait_for_server
from explorer.server.connect import ConnectError, Target


async def test_the_wait_counts_down_and_gives_up(tmp_path: object) -> None:
    target = Target(dsn=f"host={tmp_path} port=1 user=nobody dbname=none")
    left: list[float] = []
    with pytest.raises(ConnectError) as err:
        await wait_for_server(target, timeout=2.0, tick=left.append, every=0.5)
    assert "did not answer again within 2 s" in str(err.value)
    assert len(left) >= 2 and left == sorted(left, reverse=True), left
    assert all(0 <= s < 2 for s in left)


async def test_a_hopeless_wait_ends_at_once(tmp_path: object) -> None:
    target = Target(dsn=f"host={tmp_path} port=1 user=nobody dbname=none")

    class Gone(Exception):
        pass

    def hopeless() -> None:
        raise Gone

    with pytest.raises(Gone):
        await wait_for_server(target, timeout=60.0, hopeless=hopeless)
