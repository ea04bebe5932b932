"""A replay says the time it has left, not the recording's (issue 39: a replay at 16× showed
the recording's `~4 min left`)."""

from __future__ import annotations

from explorer.analysis.rounds import replayed_plan

PLAN = "round 7 of ≤ 30 · ~4 min left · 3 comparisons open"


def test_the_time_left_is_the_recordings_divided_by_the_speed() -> None:
    assert replayed_plan(PLAN, 1, paused=False) == PLAN
    assert (
        replayed_plan(PLAN, 16, paused=False) == "round 7 of ≤ 30 · ~15 s left · 3 comparisons open"
    )
    assert (
        replayed_plan(PLAN, 2, paused=False) == "round 7 of ≤ 30 · ~2 min left · 3 comparisons open"
    )


def test_no_time_left_is_said_paused_or_all_at_once() -> None:
    assert "left" not in replayed_plan(PLAN, 4, paused=True)
    assert "replay paused" in replayed_plan(PLAN, 4, paused=True)
    assert "left" not in replayed_plan(PLAN, 0, paused=False)
    assert replayed_plan(PLAN, 0, paused=False).startswith("round 7 of ≤ 30 · 3 comparisons")
