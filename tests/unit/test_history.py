"""`pgwx history`: each run is compared with the run just before it (issue 40, promise 9)."""

from __future__ import annotations

from explorer.analysis import history
from tests.support.stored import history_runs as runs


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
