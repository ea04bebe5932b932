"""`pgwx history`: each run is compared with the run just before it (issue 40, promise 9)."""

from __future__ import annotations

from explorer.analysis import history
from explorer.models import RunRecord
from tests.support.stored import record, trial


def runs(*slowdowns: float) -> list[RunRecord]:
    """quick-demo runs an hour apart, oldest first: the second variant `slowdown` times the
    baseline's duration, seven trials a side."""
    out = []
    for n, slow in enumerate(slowdowns):
        rec = record(f"2026010{n + 1}-000000-aaaaa{n}", minutes_ago=60 * (len(slowdowns) - n))
        rec.profile.variants[1:] = [rec.profile.variants[1]]
        other = rec.profile.variants[1].name
        for rep in range(1, 8):
            rec.trials.append(trial(rec.id, "logged", rep, secs=1.0 + rep / 1000))
            rec.trials.append(trial(rec.id, other, rep, secs=slow + rep / 1000))
        out.append(rec)
    return out


def test_each_run_is_compared_with_the_run_just_before_it() -> None:
    # 2× slower, then the same, then the same again: the second run left the first's
    # interval; the third is inside the second's (against the first it would be flagged).
    first, second, third = runs(2.0, 1.0, 1.0)
    text = history.to_markdown("quick-demo", history.history([third, first, second]))
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines()[4:7]}
    assert set(rows) == {first.id, second.id, third.id}, text
    assert rows[first.id].endswith("|  |")  # nothing before it
    assert "⚑ moved from 2.00× to 1.00×" in rows[second.id]
    assert rows[third.id].endswith("|  |"), text  # the run before it said the same
    assert "Change points (⚑)" in text
