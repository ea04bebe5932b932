"""The end card and the headline of a live run read the verdicts its runner judged as the run
ended (issue 36: a run's verdicts are judged once at its end): a real two-variant run on the
bundled PG 18 through `m` in the presenter layout; from its end on, nothing the card or the
headline draw judges the run again — not on a resize, not on a headline sync — and what they
tell is what judging the run afresh tells."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from explorer.analysis import card as card_module
from explorer.analysis import servers
from explorer.analysis.card import card_lines
from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.models import Knobs, TableKind, Variant
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.headline import Headline, headline_line
from explorer.tui.widgets.summary import SummaryCard
from tests.support.app import matrix_to_servers_card, wait_for
from tests.support.judging import count_judgements
from tests.support.runs import small_profile

PROFILE = small_profile(
    "table-kind",
    [Variant(name="logged"), Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED))],
    rows=500,
    repeats=2,
).model_copy(update={"warmup": 0})
"""Two variants, two rounds: a card with a verdict, quickly."""


async def test_the_end_card_and_headline_judge_nothing_after_the_run(
    pg18: Target, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = card_module.judge
    judged: list[str] = []

    def counted(record: Any, **kwargs: Any) -> Any:
        judged.append(record.id)
        return real(record, **kwargs)

    # the judge `card_lines` calls when it is not handed the run's judgement
    monkeypatch.setattr(card_module, "judge", counted)
    app = PgwxApp(target=pg18, store=store, profiles=[PROFILE], present=True)
    async with app.run_test(size=(160, 45)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.caps is not None, 30)
        await pilot.pause(0.3)
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.status == "running", 30)
        await wait_for(pilot, lambda: lab.view.status == "finished", 240)
        card = lab.query_one(SummaryCard)
        await wait_for(pilot, lambda: card.display and card.record is not None, 60)
        await pilot.pause(0.5)
        headline = lab.query_one(Headline)
        assert headline.record is card.record  # synced with the card (shown when it tells one)
        for size in ((120, 36), (200, 50), (160, 45)):  # redrawn, refitted, synced
            await pilot.resize_terminal(*size)
            await pilot.pause(0.3)
            lab.sync_headline()
        record = card.record
        assert record is not None
        pass
        assert judged == [], f"the card or the headline judged the run again: {judged}"
        # what they tell is what judging the run afresh tells
        monkeypatch.setattr(card_module, "judge", real)
        assert card.lines == card_lines(record)
        assert headline.line == headline_line(card_lines(record))
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)


@pytest.mark.pg15
async def test_a_two_server_run_is_judged_once_for_its_table_and_card(
    pg15: Target, pg18: Target, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups: list[int] = []
    real_group = servers.judge_servers

    def counted_group(*args: Any, **kwargs: Any) -> servers.ServerJudgement:
        if kwargs.get("within", True):
            groups.append(1)
        return real_group(*args, **kwargs)

    monkeypatch.setattr(servers, "judge_servers", counted_group)
    calls = count_judgements(monkeypatch)
    app = PgwxApp(servers=[pg15, pg18], store=store, profiles=[PROFILE], present=True)
    async with app.run_test(size=(160, 45)) as pilot:
        lab = app.lab
        card = await matrix_to_servers_card(pilot, lab)
        await pilot.resize_terminal(120, 36)
        await pilot.pause(0.3)
        group = {r.id for r in lab.controller.group}
        assert len(group) == 2
        ended = Counter(c for c in calls if c in group)
        assert ended == Counter(group), f"each server's run judged once at its end: {calls}"
        assert len(groups) == 1, "the verdicts between the servers judged more than once"
        assert card.servers is not None and card.servers.judged is lab.controller.group_judged
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)


async def test_a_replays_end_card_reads_the_judgement_its_table_was_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = card_module.judge
    judged: list[str] = []

    def counted(record: Any, **kwargs: Any) -> Any:
        judged.append(record.id)
        return real(record, **kwargs)

    monkeypatch.setattr(card_module, "judge", counted)
    source = ReplaySource.from_file(recordings_dir() / "fk-timing-restore.pgwx")
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), present=True)
    async with app.run_test(size=(160, 45)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 60)
        card = lab.query_one(SummaryCard)
        await wait_for(pilot, lambda: card.display and card.record is not None, 10)
        await pilot.resize_terminal(120, 36)
        await pilot.pause(0.3)
        assert judged == [], f"the replay's card or headline judged it again: {judged}"
        record = card.record
        assert record is not None and lab.view.judgement_of(record) is not None
        monkeypatch.setattr(card_module, "judge", real)
        assert card.lines == card_lines(record)
