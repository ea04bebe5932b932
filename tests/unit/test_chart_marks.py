"""Charts a room can read: distinct phase labels, rules that do not become a picket fence,
and series told apart by glyph where the terminal has only 16 colours."""

from __future__ import annotations

import pytest

from explorer.tui.widgets.chart import (
    MARK_GAP,
    phase_labels,
    series_slots,
    thin_marks,
    uses_glyphs,
)


def test_phases_sharing_an_initial_get_distinct_labels() -> None:
    names = ["vacuum-analyze", "vacuum-analyze-2", "copy", "commit", "load", "add-fk"]
    labels = phase_labels(names)
    assert len(set(labels.values())) == len(names), labels
    assert labels["load"] == "L" and labels["add-fk"] == "A"  # unambiguous: the initial
    assert labels["vacuum-analyze-2"].endswith("2")
    assert labels["copy"].startswith("C") and labels["commit"].startswith("C")


def test_a_phase_keeps_one_label_whatever_else_runs() -> None:
    assert phase_labels(["load", "commit"]) == {"load": "L", "commit": "C"}
    assert phase_labels(["x", "x", "x"]) == {"x": "X"}


def test_thirty_phase_starts_on_a_narrow_chart_are_thinned_to_what_fits() -> None:
    names = ["load", "commit", "add-fk"] * 10
    marks = [(float(i), n) for i, n in enumerate(names)]
    columns = 40
    kept = thin_marks(marks, 0.0, 29.0, columns)
    assert 3 <= len(kept) < len(marks)
    labels = phase_labels(names)
    # Every kept rule leaves room for its label and a gap before the next one.
    cols = [x / 29.0 * columns for x, _ in kept]
    for (x, name), here, there in zip(kept, cols, cols[1:], strict=False):
        assert there - here >= len(labels[name]) + MARK_GAP, (x, name)
    # With room for all of them, none is dropped.
    assert thin_marks(marks, 0.0, 29.0, 400) == marks


@pytest.mark.parametrize(
    ("no_color", "system", "headless", "glyphs"),
    [
        (False, "truecolor", False, False),
        (False, "256", False, False),
        (False, "standard", False, True),  # TERM=xterm, screen: 16 colours
        (False, "windows", False, True),
        (False, None, False, True),
        (True, "truecolor", False, True),
        (False, "standard", True, False),  # tests and screenshots draw full colour
    ],
)
def test_series_use_glyphs_when_colours_are_too_few(
    no_color: bool, system: str | None, headless: bool, glyphs: bool
) -> None:
    assert uses_glyphs(no_color, system, headless) is glyphs


def test_no_two_series_of_a_chart_share_a_slot() -> None:
    # With glyphs, a slot is a glyph: distinct slots mean distinct glyphs.
    names = ["client writes", "client extends", "client fsyncs", "ckpt writes", "bgwriter writes"]
    slots = series_slots(names)
    assert len(set(slots.values())) == len(names)
