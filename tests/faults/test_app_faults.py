"""The app when things go wrong: a server it cannot reach, a damaged journal, SIGHUP/SIGTERM."""

from __future__ import annotations

import math
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.lab.safety.settings import Journal
from explorer.lab.store.results import ResultStore
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import UNDO_PENDING, ServerHeader
from tests.support.app import connected, log_text, wait_for
from tests.support.server import server_state


@pytest.fixture
def later_server() -> Iterator[LocalServer]:
    """A bundled cluster that is not running yet (the test starts it)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-l-", dir="/tmp"))
    base.chmod(0o755)
    server = LocalServer(base / "pg")
    server.start()
    server.stop()
    yield server
    if server.is_running():
        server.stop()
    shutil.rmtree(base, ignore_errors=True)


def header_text(app: PgwxApp) -> str:
    return str(app.lab.query_one(ServerHeader).render())


async def test_refused_connection_shows_in_the_header_and_r_reconnects(
    later_server: LocalServer, tmp_path: Path
) -> None:
    kw = later_server.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/{kw['database']}?host={kw['host']}&port={kw['port']}"
    app = PgwxApp(dsn=dsn, store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        header = lab.query_one(ServerHeader)
        await wait_for(pilot, lambda: bool(header.failure), 60)
        await pilot.pause(0.2)
        text = header_text(app)
        assert "✗ not connected" in text and header.failure in text and "press R" in text
        # the whole sentence fits in the header's rows at 80 columns (the log scrolls it away)
        width = header.content_region.width
        lines = text.split("\n")
        need = 1 + math.ceil(len(lines[1]) / width)
        assert header.size.height >= need, (header.size, text)
        assert lab.check_action("reconnect", ()) is True
        await pilot.press("r")  # a run says why it cannot start, and how to retry
        await pilot.pause(0.1)

        later_server.start()
        await pilot.press("R")
        await wait_for(pilot, lambda: app.caps is not None, 60)
        await pilot.pause(0.2)
        assert header.failure == "" and "not connected" not in header_text(app)
        assert header.size.height <= 2
        assert not lab.check_action("reconnect", ())


async def test_damaged_journal_is_shown_until_it_is_dealt_with(
    pg18: Target, store: ResultStore
) -> None:
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    journal = Journal(caps.system_identifier)
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    journal.path.write_text('{"fsync": {"au')
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        header = lab.query_one(ServerHeader)
        await wait_for(pilot, lambda: header.undo_pending, 60)
        await pilot.pause(0.2)
        text = header_text(app)
        assert UNDO_PENDING in text and "pgwx restore" in header.failure
        assert journal.path.exists()  # never dropped
        # `pgwx restore` in another terminal dealt with it; R tries again
        journal.path.unlink()
        await pilot.press("R")
        await connected(pilot)
        await pilot.pause(0.2)
        assert not header.undo_pending and UNDO_PENDING not in header_text(app)


@pytest.mark.parametrize("signo", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
async def test_signal_quits_the_app_like_q(
    signo: signal.Signals, pg18: Target, store: ResultStore
) -> None:
    before = await server_state(pg18)
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        lab = await connected(pilot)
        lab.knob_panel.choose_profile("quick-demo")
        lab.knob_panel.select("scale").value = 1.0
        lab.knob_panel.select("fsync").value = False
        lab.knob_panel.select("synchronous_commit").value = "off"
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: lab.view.phase is not None, 60)
        conn = await pg18.connect("test")
        try:
            assert await conn.fetchval("SHOW fsync") == "off"
        finally:
            await conn.close()
        os.kill(os.getpid(), signo)  # the loop's handler, as a dropped SSH session would
        await wait_for(pilot, lambda: not app.is_running, 120)
    assert app.signal_received == signo
    assert store.load("latest").status == "cancelled"
    assert await server_state(pg18) == before


async def test_orphan_bundled_server_is_named_and_stopped_on_quit(
    later_server: LocalServer, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"):
        monkeypatch.delenv(name, raising=False)
    later_server.start()
    later_server.release()  # what a pgwx that died leaves: running, held by nobody
    app = PgwxApp(data_dir=later_server.data_dir, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        assert "leftrunningbyanearlierpgwx" in log_text(lab)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)
    assert not later_server.is_running()
