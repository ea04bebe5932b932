"""Auto repeats say where they stand, in the terminal and in the app, with the same words."""

from __future__ import annotations

from explorer.lab.view.runstate import RunView
from explorer.lab.view.stream import narrate
from explorer.models import TrialStarted
from explorer.tui.widgets.duration import DurationPane

PLAN = "round 7 of ≤ 30 · ~3 min left · 3 comparisons open"


def test_the_progress_line_and_the_duration_pane_show_the_round_plan() -> None:
    event = TrialStarted(at=1.0, variant="unlogged", repeat=8, index=20, total=24, plan=PLAN)
    # One counter: the plan's round 7 (warm-ups apart), not also "rep 8" beside it.
    assert narrate(event) == f"[20/24] unlogged · {PLAN}"
    view = RunView()
    view.status = "running"
    view.apply(event)
    assert view.round_plan == PLAN
    pane = DurationPane.__new__(DurationPane)
    pane.view = view  # type: ignore[assignment]
    shown = pane._now_text(60).plain.splitlines()
    assert shown[0].startswith("now: unlogged · 20/24")
    assert "rep" not in shown[0]
    assert shown[1] == PLAN
    # A fixed-repeats run from an older pgwx (no plan): the line is not there.
    old = TrialStarted(at=2.0, variant="logged", repeat=1, index=1, total=6)
    assert narrate(old) == "[1/6] logged · rep 1"
    view.apply(old)
    assert view.round_plan is None
    assert PLAN not in pane._now_text(60).plain
    assert pane._now_text(60).plain.startswith("now: logged · rep 1 · 1/6")
