"""Fixtures of the fault rooms: an owned cluster of the module's own (issue 20).

The cases break their cluster (restarts, impossible settings, kills), so it is never one of
the session's shared servers. Each test gets it running, with nothing of pgwx's on it, and
its directory free, as a dead pgwx leaves it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from explorer.server.embedded import LocalServer
from tests.support.faults import FaultServer
from tests.support.truth import force_stop


@pytest.fixture(scope="module")
def owned_base(pg_base: Path, request: pytest.FixtureRequest) -> Path:
    """The module's own directory under the session's short, world-traversable one."""
    path = pg_base / f"t20-{request.module.__name__.rsplit('_', 1)[-1]}"
    path.mkdir(mode=0o755)
    return path


@pytest.fixture(scope="module")
def owned_cluster(owned_base: Path) -> Iterator[FaultServer]:
    server = LocalServer(owned_base / "pg")
    server.start()
    server.release()  # as a dead pgwx leaves it: running, its directory free
    yield FaultServer(server)
    force_stop(server.data_dir)


@pytest_asyncio.fixture
async def owned(owned_cluster: FaultServer) -> AsyncIterator[FaultServer]:
    """The module's bundled cluster, running and clean before and after each case."""
    await owned_cluster.reset()
    owned_cluster.server.release()
    yield owned_cluster
    await owned_cluster.reset()
    owned_cluster.server.release()
