"""The charts say which trial belongs to which variant (issue 21).

After a long matrix the charts were a row of phase rules and nothing said whose trial each
stretch was. Under the zero line a ribbon now names each trial's variant by one lower-case
letter (its key in the caption), `─` along the rest of its band.
"""

from __future__ import annotations

import re
from pathlib import Path

from explorer.lab.store.replay import recordings_dir
from explorer.models import TrialStarted
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.chart import ribbon, variant_labels
from tests.support.app import replay_app, settle

RECORDING = recordings_dir() / "fk-timing-restore.pgwx"


def test_variant_letters_are_one_column_and_distinct() -> None:
    names = ["none", "immediate", "deferred", "after-load", "not-valid"]
    labels = variant_labels(names)
    assert all(len(v) == 1 and v.islower() for v in labels.values())
    assert len(set(labels.values())) == len(names)
    assert labels["none"] == "n" and labels["deferred"] == "d"
    assert labels["not-valid"] != "n"  # a second n-variant takes another of its letters


def test_a_ribbon_marks_each_trial_start_and_fills_its_band() -> None:
    bands = [(0.0, "a"), (10.0, "b"), (20.0, "b"), (30.0, "a")]
    row = ribbon(bands, 0.0, 40.0, 20)
    # Four trials of 5 columns: letter, then the band; a second b-trial starts anew.
    assert row == "a────b────b────a────"
    # Trials narrower than a column share it; the later one is shown, none is invented.
    dense = ribbon([(0.0, "a"), (0.1, "b"), (10.0, "a")], 0.0, 20.0, 10)
    assert dense == "b────a────"


async def test_the_chart_names_the_variant_of_each_trial_in_its_window(tmp_path: Path) -> None:
    app = replay_app(tmp_path, upto=1500, fixture=RECORDING)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        view = app.lab.view
        pane = app.lab.query_one(ActivityPane)
        spec = pane.chart.drawn_spec
        assert spec is not None and list(spec.bands) == list(view.trial_marks)
        # The window's trials, from the events: the one in flight at its left edge, then
        # every trial that started inside it.
        xs = [at for at, _ in view.activity.wal]
        x0, x1 = min(xs), max(xs)
        starts = [
            (e.at, e.variant) for e in app.config.replay.events if isinstance(e, TrialStarted)
        ]  # type: ignore[union-attr]
        in_window = [name for at, name in starts if at <= x0][-1:]
        in_window += [name for at, name in starts if x0 < at <= x1]
        assert len(in_window) >= 5
        # The chart as drawn: its ribbon row, and the caption's key for the letters.
        drawn = [strip.text for strip in pane.chart.render_lines(pane.chart.region.reset_offset)]
        row = next(line for line in drawn if re.search(r"[a-z]─", line))
        letters = re.findall(r"[a-z]", row)
        caption = " ".join(
            strip.text
            for strip in app.lab.query_one("#activity-caption").render_lines(
                app.lab.query_one("#activity-caption").region.reset_offset
            )
        )
        key = {m.group(1): m.group(2) for m in re.finditer(r"\b([a-z]) ([a-z][\w-]+)", caption)}
        named = [key[c] for c in letters]
        assert set(named) == set(in_window)
        assert named[0] == in_window[0] and named[-1] == in_window[-1]


def test_six_variant_server_pairs_read_apart_with_the_server_named() -> None:
    """`--pg 15 --pg 18` with three variants: six pairs, each ribbon label and key naming its
    server ('l15', 'l18'), not six unrelated letters (`l o u n t e`)."""
    names = [f"{v} @ {s}" for v in ("logged", "unlogged", "temporary") for s in ("15", "18")]
    labels = variant_labels(names)
    assert labels == {
        "logged @ 15": "l15",
        "logged @ 18": "l18",
        "unlogged @ 15": "u15",
        "unlogged @ 18": "u18",
        "temporary @ 15": "t15",
        "temporary @ 18": "t18",
    }
    bands = [(float(10 * n), name) for n, name in enumerate(names)]
    row = ribbon(bands, 0.0, 60.0, 30, labels)
    assert row == "l15──l18──u15──u18──t15──t18──"
    # A trial too narrow for its label keeps the variant's letter alone.
    assert ribbon(bands, 0.0, 60.0, 12, labels) == "l─l─u─u─t─t─"
