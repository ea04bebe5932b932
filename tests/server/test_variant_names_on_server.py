"""A variant label an earlier run already used is numbered in the app (the serverless half
is tests/unit/test_naming.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.store.results import ResultStore
from explorer.models import Knobs, Profile, RunRecord, ServerInfo, TableKind, Variant
from explorer.server.connect import Target


async def test_the_app_numbers_a_label_an_earlier_run_already_uses(
    pg18: Target, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from explorer.tui.app import PgwxApp
    from explorer.tui.controller import RunController
    from tests.support.app import connected

    started: list[Profile] = []
    monkeypatch.setattr(
        RunController, "run_profile", lambda self, profile, *a, **k: started.append(profile)
    )
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        lab.knob_panel.choose_profile("quick-demo")
        lab.knob_panel.select("table_kind").value = TableKind.UNLOGGED
        await pilot.pause()
        # An earlier run in the table used the label "unlogged" for other knobs.
        profile = load_profile("quick-demo")
        earlier = Variant(name="unlogged", knobs=Knobs(table_kind="unlogged", pregrown=True))
        lab.view.record = RunRecord(
            id="r1",
            profile=profile.model_copy(update={"variants": [earlier]}),
            server=ServerInfo(dsn_masked="x", bundled=True, capabilities=lab.caps),
            started_at=dt.datetime.now(dt.UTC),
        )
        await pilot.press("r")
        await pilot.pause()
    assert [v.name for v in started[0].variants] == ["unlogged #2"]
