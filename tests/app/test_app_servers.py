"""The app on several servers (issue 22): `pgwx --pg 15 --pg 18` from the knob panel.

An owned PostgreSQL 15 and the bundled 18 are handed to the app as `pgwx --pg 15 --pg 18`
would reach them. The knob panel lists both, checked; `m` takes turns on the checked ones
through the coordinator `pgwx run --pg 15 --pg 18` uses, the table shows each variant on each
server and the verdicts between them, and quitting puts both servers back.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore
from explorer.models import Knobs, Variant
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.results_table import MechanismLine, ResultsTable
from explorer.tui.widgets.summary import SummaryCard, render_servers_card
from tests.support.app import log_text, wait_for
from tests.support.runs import small_profile
from tests.support.server import PG15_BIN, server_state

pytestmark = pytest.mark.pg15

PROFILE = small_profile("table-kind", [Variant(name="unlogged")], rows=500, repeats=2).model_copy(
    update={"warmup": 0}
)
"""One variant, two rounds, no warm-up: the smallest matrix with a verdict row to show."""


def two_server_app(pg15: Target, pg18: Target, store: ResultStore) -> PgwxApp:
    return PgwxApp(servers=[pg15, pg18], store=store, profiles=[PROFILE])


async def test_the_matrix_takes_turns_on_both_servers_and_q_puts_both_back(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    before = {t.label(): await server_state(t) for t in (pg15, pg18)}
    app = two_server_app(pg15, pg18, store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: len(lab.knob_panel.server_boxes) == 2, 30)
        boxes = lab.knob_panel.server_boxes
        # Laid out by the next refresh (on a loaded machine not at once): then one row each.
        await wait_for(pilot, lambda: all(b.region.height > 0 for b in boxes), 30)
        assert [str(b.label) for b in boxes] == ["15", "18"]
        assert all(b.value for b in boxes) and all(b.region.height == 1 for b in boxes)
        header = lab.query_one(ServerHeader)
        assert header.servers == "m on 15 + 18 · r on 15"
        assert header.label.startswith("PostgreSQL 15.")
        assert header._right().plain.endswith("owned")  # the badges are r's server's
        assert lab.caps is not None and lab.caps.major == 15  # the knobs describe r's server
        said = log_text(lab)
        assert "connected:15=PostgreSQL15." in said and "connected:18=bundledPostgreSQL18." in said
        assert str(boxes[1].tooltip).startswith("18 = bundled PostgreSQL 18.")
        await pilot.pause()
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.status == "running", 30)
        assert all(b.disabled for b in boxes)  # the servers cannot change under a run
        await wait_for(pilot, lambda: lab.view.status == "finished", 180)
        await wait_for(pilot, lambda: bool(lab.view.server_rows), 30)
        # The table and the log take the pair rows when the screen hears of them (not at once
        # on a loaded machine): wait for the log's sentence, written with the table.
        await wait_for(pilot, lambda: "betweentheservers:" in log_text(lab), 30)
        await pilot.pause(0.3)
        # It ends on a card as one server's run does: the pair's verdict, each server's lines.
        card = lab.query_one(SummaryCard)
        await wait_for(pilot, lambda: card.display and card.servers is not None, 30)
        told = card.servers
        assert told is not None and told.biggest is not None
        assert (told.biggest.variant, told.biggest.server, told.biggest.reference) == (
            "unlogged",
            "18",
            "15",
        )
        drawn = render_servers_card(told, PROFILE.name, 60).plain
        assert "2 of 2 servers finished (15, 18)" in drawn
        assert "on 15\n" in drawn and "on 18\n" in drawn
        table = lab.query_one(ResultsTable)
        shown = [
            (str(table.get_row_at(n)[0]), str(table.get_row_at(n)[1]))
            for n in range(table.row_count)
        ]
        variants = {v for v, _ in shown}
        assert {"unlogged @ 15", "unlogged @ 18"} <= variants, shown
        assert "unlogged on 18 vs 15" in variants, shown
        pair = next(r for r in lab.view.server_rows if r.phase == "total")
        assert pair.verdict is not None and pair.n == 2
        assert "betweentheservers:unloggedtotalon18vs15:" in log_text(lab)
        # The log counts trials as the header does (both servers'), never each server's own.
        total = lab.view.total_trials
        assert f"[{total}/{total}]" in log_text(lab) and f"[1/{total // 2}]" not in log_text(lab)
        # The pair's detail line says what its figures are (it has no mechanism of its own).
        index = next(n for n, (v, p) in enumerate(shown) if v == "unlogged on 18 vs 15")
        table.move_cursor(row=index)
        line = lab.query_one(MechanismLine)
        await wait_for(pilot, lambda: "unlogged on 18 vs 15" in str(line.render()), 30)
        detail = str(line.render())
        assert "18's trials, judged against 15's" in detail and "no trial" not in detail
        runs = store.list_runs()
        assert len(runs) == 2 and all(r.axis is not None for r in runs)
        first = store.load(runs[0].id)
        group = store.group(first)
        assert [r.axis.label for r in group if r.axis] == ["15", "18"]
        assert {r.server.capabilities.major for r in group} == {15, 18}
        order = sorted((t.started_at, r.axis.label) for r in group if r.axis for t in r.trials)
        assert [label for _, label in order] == ["15", "18", "15", "18"]  # turns, trial by trial
        await pilot.press("e")  # the table as `pgwx report` writes a run on several servers
        exports = store.path.parent / "exports"
        await wait_for(pilot, lambda: any(exports.glob("*.md")), 30)
        exported = list(exports.glob("*.md"))
        assert exported and "## Each variant on each server, against 15" in exported[0].read_text()
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)
    for t in (pg15, pg18):
        assert await server_state(t) == before[t.label()]


@pytest.mark.parametrize("key", ["c", "q"])
async def test_c_or_q_mid_run_cancels_on_both_servers_and_puts_both_back(
    pg15: Target, pg18: Target, store: ResultStore, key: str
) -> None:
    before = {t.label(): await server_state(t) for t in (pg15, pg18)}
    slow = small_profile(
        "table-kind",
        [Variant(name="async", knobs=Knobs(synchronous_commit="off"))],
        rows=200_000,
        repeats=3,
    )
    app = PgwxApp(servers=[pg15, pg18], store=store, profiles=[slow])
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: len(lab.knob_panel.server_boxes) == 2, 30)
        await pilot.press("m")
        # Into the second server's first trial: both have set what the variant needs.
        await wait_for(pilot, lambda: lab.view.trial_index >= 2 and lab.view.phase is not None, 120)
        await pilot.press(key)
        if key == "q":
            await wait_for(pilot, lambda: not app.is_running, 60)
        else:
            await wait_for(pilot, lambda: not lab.busy(), 60)
            assert lab.view.status == "cancelled"
            assert not lab.knob_panel.locked
        runs = store.list_runs()
        assert len(runs) == 2 and {r.status for r in runs} == {"cancelled"}
    for t in (pg15, pg18):
        assert await server_state(t) == before[t.label()]


async def test_unchecking_a_server_runs_on_the_other_and_the_last_stays_checked(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    app = two_server_app(pg15, pg18, store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        panel = lab.knob_panel
        await wait_for(pilot, lambda: len(panel.server_boxes) == 2, 30)
        on15, on18 = panel.server_boxes
        await wait_for(pilot, lambda: on15.region.height > 0, 10)  # laid out: the click lands
        await pilot.click(on15)
        header = lab.query_one(ServerHeader)

        def only_18() -> bool:
            return (
                lab.caps is not None
                and lab.caps.major == 18
                and header.servers == "m on 18 · r on 18"
            )

        # Within seconds, not 0.2 s: on a loaded machine the header followed later (seen once
        # in a full run).
        await wait_for(pilot, only_18, 10)
        assert not on15.value and panel.checked_servers() == (1,)
        assert "bundled" in header.label
        await pilot.click(on18)  # the last one checked
        await pilot.pause(0.2)
        assert on18.value and panel.checked_servers() == (1,)
        assert "18 stays checked" in " ".join(
            "".join(s.text for s in line)
            for line in lab.query_one("#log").lines  # type: ignore[attr-defined]
        )
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.status == "running", 30)
        await wait_for(pilot, lambda: lab.view.status == "finished", 180)
        runs = store.list_runs()
        assert len(runs) == 1 and runs[0].axis is None
        assert runs[0].server.capabilities.major == 18
        assert not lab.view.servers and not lab.view.server_rows


async def test_a_server_that_cannot_be_had_is_one_sentence(tmp_path: Path) -> None:
    # Named as the command line names them (not handed in): the first cannot be had.
    app = PgwxApp(servers=[(None, 99), (None, 15)], store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        header = app.lab.query_one(ServerHeader)
        await wait_for(pilot, lambda: bool(header.failure), 30)
        assert header.failure.startswith("--pg 99 cannot be used"), header.failure
        assert "Traceback" not in log_text(app.lab)
        assert not app.lab.knob_panel.server_boxes  # no list of servers that are not there
        assert app.lab.controller.sessions == []


@pytest.fixture
def cluster_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private directory for the clusters the app makes (as PGWX_CLUSTER_HOME moves them)."""
    if not (PG15_BIN / "initdb").exists():
        pytest.skip("Debian's postgresql-15 is not installed")
    base = Path(tempfile.mkdtemp(prefix="pgwx-ax-", dir="/tmp"))  # short: the sockets are here
    base.chmod(0o755)  # the servers' user must get through to their clusters
    monkeypatch.setenv("PGWX_CLUSTER_HOME", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("how", ["q", "SIGTERM"])
async def test_quitting_stops_every_cluster_the_app_started(
    cluster_home: Path, tmp_path: Path, how: str
) -> None:
    # Named as `pgwx --pg 15 --pg 18` names them: the app makes and starts both clusters.
    app = PgwxApp(servers=[(None, 15), (None, 18)], store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        panel = app.lab.knob_panel
        await wait_for(pilot, lambda: len(panel.server_boxes) == 2, 120)
        owned = [s.target.bundled for s in app.lab.controller.sessions]
        assert [s.version.split(".")[0] for s in owned if s] == ["15", "18"]
        assert all(s is not None and s.is_running() for s in owned)
        assert all(s is not None and str(s.data_dir).startswith(str(cluster_home)) for s in owned)
        if how == "q":
            await pilot.press("q")
        else:  # a kill is handled as q (a dropped SSH session's SIGHUP too)
            app.on_terminating_signal(signal.SIGTERM)
        await wait_for(pilot, lambda: not app.is_running, 60)
    assert not any(s is not None and s.is_running() for s in owned)
