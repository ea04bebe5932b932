"""The app on installed PostgreSQL builds (issue 22).

On the bundled 18 (no lz4) the knob panel names the installed PostgreSQL that has lz4: the
reason line under the TOAST knob keeps the way out on screen (`pgwx --pg 15`), and the tooltip
has the whole sentence with the installation's directory. On an owned 15 the header names the
build and says "owned", not "bundled".
"""

from __future__ import annotations

import re
import time

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from explorer.lab.store.results import ResultStore
from explorer.models import Toast
from explorer.server import installs
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader
from tests.support.server import PG15_BIN

pytestmark = pytest.mark.skipif(
    not (PG15_BIN / "postgres").exists(), reason="Debian's postgresql-15 is not installed"
)


async def opened(pilot: Pilot[int]) -> None:
    """Wait until the app has reached and probed its server."""
    app = pilot.app
    assert isinstance(app, PgwxApp)
    deadline = time.monotonic() + 20
    while app.caps is None:
        assert time.monotonic() < deadline, "the app never reached the server"
        await pilot.pause(0.05)
    await pilot.pause(0.2)


async def test_the_toast_knob_says_where_lz4_is(pg18: Target, store: ResultStore) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        panel = app.lab.knob_panel
        panel.choose_profile("toast-compression")  # a load with a toastable column
        await pilot.pause()
        toast = panel.select("toast")
        why = toast.unavailable[Toast.LZ4]
        # Debian's 15, or the pip 17 of the lz4 extra where it is installed (newest first)
        lz4 = installs.lz4_elsewhere()
        assert lz4 is not None
        where = rf"{re.escape(lz4.name())} has it: `pgwx {lz4.option()}`"
        assert re.search(where, why), why
        line = str(panel.query_one("#why-toast", Static).render())
        assert f"lz4 is not built into this server; `pgwx {lz4.option()}` has it" in line, line
        assert toast.tooltip is not None and str(lz4.home) in str(toast.tooltip)


async def test_the_header_names_an_owned_15(pg15: Target, store: ResultStore) -> None:
    app = PgwxApp(target=pg15, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        header = app.lab.query_one(ServerHeader)
        assert header.label.startswith("PostgreSQL 15.") and str(PG15_BIN) in header.label
        right = header._right().plain
        assert right.endswith("owned") and "lz4 ✓" in right and "pg_stat_io ✗" in right
