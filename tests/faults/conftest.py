"""Fixtures of the fault rooms: an owned cluster of the module's own (issue 20).

The cases break their cluster (restarts, impossible settings, kills), so it is never one of
the session's shared servers. Each test gets it running, with nothing of pgwx's on it, and
its directory free, as a dead pgwx leaves it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from explorer.server.embedded import LocalServer
from tests.faults_helpers import FaultServer


@pytest.fixture(scope="module")
def owned_base() -> Iterator[Path]:
    """A short, world-traversable directory for the module's cluster."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-t20-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def owned_cluster(owned_base: Path) -> Iterator[FaultServer]:
    server = LocalServer(owned_base / "pg")
    server.start()
    server.release()  # as a dead pgwx leaves it: running, its directory free
    yield FaultServer(server)
    if server.is_running():
        server._run([str(server.tool("pg_ctl")), "-D", str(server.data_dir), "-m", "i", "stop"])


@pytest_asyncio.fixture
async def owned(owned_cluster: FaultServer) -> AsyncIterator[FaultServer]:
    """The module's bundled cluster, running and clean before and after each case."""
    await owned_cluster.reset()
    owned_cluster.server.release()
    yield owned_cluster
    await owned_cluster.reset()
    owned_cluster.server.release()
