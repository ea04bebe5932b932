"""The duration bars use the table's words and say what their brackets are (issue 21).

The bars once said `too few (n=1)` where the table says `undecided, too few runs (n=1)`,
labelled variants whose baseline had only run its warm-up `too few (n=0)`, marked a variant
with only a warm-up behind it `✗` (which reads as a failure), and headed every bar
`median [95% CI]` while the baseline's and the too-few rows show a min–max. Folded from the
shipped quick-demo recording, trial by trial.
"""

from __future__ import annotations

import re

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.view.runstate import RunView
from explorer.models import TrialEnded
from explorer.tui.widgets.duration import DurationPane


def bars_after_each_trial() -> list[tuple[RunView, str]]:
    """(state, bars text) after each trial of the quick-demo recording."""
    source = ReplaySource.from_file(recordings_dir() / "quick-demo.pgwx")
    view = RunView(profile=source.profile, scale=source.scale)
    out = []
    for event in source.events:
        view.apply(event)
        if isinstance(event, TrialEnded):
            pane = DurationPane.__new__(DurationPane)
            pane.view, pane.phase, pane.bar_gaps = view, None, 0  # type: ignore[assignment]
            snapshot = RunView(profile=view.profile)
            snapshot.summary = list(view.summary)
            out.append((snapshot, pane._bars_text(70).plain))
    return out


def test_warm_ups_are_not_failures_and_never_too_few_n0() -> None:
    seen = bars_after_each_trial()
    first = seen[0][1]
    assert "warm-up, not counted" in first
    for _, text in seen:
        assert "✗" not in text, text
        assert "n=0" not in text, text
    # A candidate measured before the baseline's first measured trial: not "no baseline phase".
    early = next(text for _, text in seen if "no baseline trial yet" in text)
    assert "no baseline phase" not in early


def test_too_few_is_said_in_the_tables_words() -> None:
    for view, text in bars_after_each_trial():
        for row in view.summary:
            v = row.verdict
            if v is None or not v.too_few or not v.n_baseline:
                continue
            n = min(v.n_baseline, v.n_candidate)
            assert f"too few runs (n={n})" in row.verdict_label()  # the table's cell
            assert f"too few runs (n={n})" in text  # the bar's tail, the same words


def test_the_header_names_the_brackets_the_rows_show() -> None:
    for _, text in bars_after_each_trial():
        header = text.strip().splitlines()[0]
        rows = text.strip().splitlines()[1:]
        intervals = any(re.search(r"\[[\d.]+–[\d.]+\]", line) for line in rows)
        ranges = any(re.search(r"\([\d.]+–[\d.]+\)", line) for line in rows)
        assert ("[95% CI]" in header) == intervals, text
        assert ("(min–max)" in header) == ranges, text
    # The finished run shows both: the baseline's min–max and the candidates' intervals.
    assert "median [95% CI] or (min–max)" in text
