"""The workload's name is never cut in silence (issue 39): at 120x36 the knob column showed
`fk-timing-restor ▼`. The longest shipped profile name fits whole at 120x36 and 80x24, and a
longer one (a profile of the user's own) ends in `…` — read off the rendered screen."""

from __future__ import annotations

import re

import pytest

from explorer.lab.profiles.catalog import load_profile, shipped_profile_paths
from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from tests.support.app import connected, rows_of

SIZES = [(120, 36), (80, 24)]
LONG = "fk-timing-restore-but-named-at-length"


def _workload_row(app: PgwxApp) -> str:
    select = app.lab.knob_panel.select("profile")
    return rows_of(app)[select.region.y]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_longest_shipped_name_fits_and_a_longer_one_says_it_is_cut(
    pg18: Target, store: ResultStore, size: tuple[int, int]
) -> None:
    shipped = [load_profile(path) for path in shipped_profile_paths()]
    longest = max((p.name for p in shipped), key=len)
    own = shipped[0].model_copy(update={"name": LONG})
    async with PgwxApp(target=pg18, store=store, profiles=[*shipped, own]).run_test(
        size=size
    ) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile(longest)
        await pilot.pause(0.3)
        row = _workload_row(pilot.app)  # type: ignore[arg-type]
        assert re.search(rf"Workload +{longest} +▼", row), row
        panel.choose_profile(LONG)
        await pilot.pause(0.3)
        row = _workload_row(pilot.app)  # type: ignore[arg-type]
        if LONG in row:
            assert re.search(rf"Workload +{LONG} +▼", row), row
        else:
            # cut visibly: the start of the name, an ellipsis, the arrow
            assert "… ▼" in row and " fk-timing-rest" in row, row
        if size == (120, 36):
            assert LONG not in row, "the test shows nothing: the long name fitted"
