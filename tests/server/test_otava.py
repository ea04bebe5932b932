"""Apache Otava on pgwx's store: the repository's otava.yaml, read by Otava itself.

Otava comes from the test extra (`apache-otava`, 0.8.0 on Python 3.11). It reaches PostgreSQL
by host and port (pg8000), so this test starts a PostgreSQL 18 of its own that also listens on
loopback TCP, fills a pgwx store there with twelve runs through pgwx's own `ResultStore` (over
TCP too) — `unlogged`'s ratio moving from 0.5 to 0.75 at the seventh run, `temporary`'s flat
at 0.6 — and runs `otava analyze` with the shipped otava.yaml on both series.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, TrialResult
from explorer.server.embedded import SUPERUSER, LocalServer
from tests.support.paths import ROOT
from tests.support.stored import record

OTAVA = shutil.which("otava", path=str(Path(sys.executable).parent)) or shutil.which("otava")
SHIFT_AT = 6
"""Index of the run (0-based) from which unlogged's true ratio is 0.75 instead of 0.5."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tcp_server(pg_base: Path) -> Iterator[tuple[LocalServer, int]]:
    """A PostgreSQL 18 listening on its private socket and on 127.0.0.1:PORT (trust auth,
    as initdb set it up for loopback)."""
    if OTAVA is None:
        if os.environ.get("CI"):
            pytest.fail("apache-otava is not installed; it is in the test extra.")
        pytest.skip("apache-otava is not installed (pip install -e '.[test]')")
    server = LocalServer(pg_base / "otava")
    server.init()
    port = _free_port()
    with (server.data_dir / "postgresql.conf").open("a") as conf:
        # a free TCP port (the socket file is named after it too; everything here uses TCP)
        conf.write(f"listen_addresses = '127.0.0.1'\nport = {port}\n")
    server.start()
    yield server, port
    server.stop()


def _trial(run_id: str, variant: str, repeat: int, secs: float) -> TrialResult:
    return TrialResult(
        run_id=run_id,
        variant=variant,
        repeat=repeat,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
        phases=[PhaseResult(name="load", seconds=secs, rows=10)],
    )


def _fill(url: str) -> list[str]:
    """Twelve finished quick-demo runs a day apart, ten trials a side, 3 % noise."""
    rng = random.Random(38)
    ids = []
    store = ResultStore(url)
    try:
        for i in range(12):
            run_id = f"202601{i + 1:02d}-000000-{i:06x}"
            store.begin_run(record(run_id, minutes_ago=(12 - i) * 24 * 60))
            true = {"logged": 1.0, "unlogged": 0.75 if i >= SHIFT_AT else 0.5, "temporary": 0.6}
            for rep in range(1, 11):
                for variant, secs in true.items():
                    noisy = secs * math.exp(rng.gauss(0, 0.03))
                    store.add_trial(run_id, _trial(run_id, variant, rep, noisy))
            store.end_run(run_id, "finished")
            ids.append(run_id)
    finally:
        store.close()
    return ids


def _otava(port: int, database: str, series: str) -> list[dict[str, object]]:
    assert OTAVA is not None
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PG", "POSTGRES_"))},
        "HOME": str(Path(database).parent),  # no ~/.otava of the user's
        "POSTGRES_HOSTNAME": "127.0.0.1",
        "POSTGRES_PORT": str(port),
        "POSTGRES_USERNAME": SUPERUSER,
        "POSTGRES_PASSWORD": "",
        "POSTGRES_DATABASE": database,
    }
    done = subprocess.run(
        [OTAVA, "analyze", "pgwx-ratio", "--config-file", str(ROOT / "otava.yaml"),
         "--branch", series, "--output", "json"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    return list(doc["pgwx-ratio"])


async def _create(port: int, database: str) -> None:
    conn = await asyncpg.connect(host="127.0.0.1", port=port, user=SUPERUSER, database="postgres")
    try:
        await conn.execute(f"CREATE DATABASE {database}")
    finally:
        await conn.close()


async def test_otava_finds_the_run_where_the_ratio_moved_and_nothing_in_a_flat_series(
    tcp_server: tuple[LocalServer, int],
) -> None:
    _, port = tcp_server
    database = f"pgwx_otava_{os.urandom(3).hex()}"
    await _create(port, database)
    url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database}"
    ids = _fill(url)

    moved = _otava(port, database, "quick-demo/unlogged/load")
    assert len(moved) == 1, moved
    assert moved[0]["attributes"]["run_id"] == ids[SHIFT_AT]  # type: ignore[index]
    change = moved[0]["changes"][0]  # type: ignore[index]
    assert change["metric"] == "ratio" and float(change["forward_change_percent"]) > 30

    assert _otava(port, database, "quick-demo/temporary/load") == []
