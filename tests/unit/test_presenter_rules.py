"""When the presenter layout comes on, which verdict its big digits tell, and a card that
counts its wrapped lines (issue 21). Pure functions: no app, no server."""

from __future__ import annotations

import pytest

from explorer.analysis.card import CardLine, card_lines
from explorer.analysis.verdict import Verdict
from explorer.lab.store.replay import ReplaySource
from explorer.tui.screens.lab import layout_classes, presenting
from explorer.tui.widgets.headline import headline_figure, headline_line, headline_words
from explorer.tui.widgets.summary import render_card
from tests.support.paths import ROOT

FK_TIMING = ROOT / "profiles" / "recordings" / "fk-timing-restore.pgwx"


@pytest.mark.parametrize(
    ("size", "present", "on"),
    [
        ((100, 30), None, True),  # a projector with an enlarged font
        ((160, 28), None, True),
        ((99, 30), None, False),  # narrower: the tabs
        ((100, 31), None, False),  # taller: the usual layouts
        ((120, 36), None, False),
        ((80, 24), None, False),
        ((120, 36), True, True),  # --present
        ((80, 24), True, True),
        ((100, 30), False, False),  # P turned it off
    ],
)
def test_when_the_presenter_layout_is_on(
    size: tuple[int, int], present: bool | None, on: bool
) -> None:
    assert presenting(*size, present) is on
    classes = layout_classes(*size, present)
    assert classes["-present"] is on


def test_the_presenter_layout_has_no_grid_or_tab_class() -> None:
    # -tall/-short drive the grid and the tabs in app.tcss: neither may apply.
    classes = layout_classes(120, 30, None)
    assert classes["-present"] and not classes["-tall"] and not classes["-short"]
    assert classes["-wide"] and not classes["-narrow"]


def test_the_usual_layouts_keep_their_breakpoints() -> None:
    assert {k for k, v in layout_classes(120, 36, None).items() if v} == {"-wide", "-tall"}
    assert {k for k, v in layout_classes(80, 24, None).items() if v} == {"-narrow", "-short"}
    assert {k for k, v in layout_classes(90, 40, None).items() if v} == {"-narrow", "-tall"}


def _line(name: str, ratio: float | None, word: str, *, decided: bool) -> CardLine:
    verdict = Verdict(
        n_baseline=10,
        n_candidate=10,
        median_baseline=1.0,
        median_candidate=ratio,
        ratio=ratio,
        difference_seconds=None if ratio is not None else 0.4,
        p_adjusted=0.001 if decided else 0.5,
        word=word,
    )
    assert verdict.decided is decided, "the fixture's verdict must be what the test says"
    return CardLine(name, False, ratio, verdict, "")


def test_the_headline_is_the_biggest_decided_verdict() -> None:
    base = CardLine("logged", True, 1.0, None, "")
    small = _line("small", 0.8, "faster", decided=True)
    big = _line("big", 2.5, "slower", decided=True)
    bigger_undecided = _line("vague", 4.0, "undecided", decided=False)
    assert headline_line([base, small, big, bigger_undecided]) is big
    assert headline_line([base, bigger_undecided, small]) is small
    # a halving is as big a change as a doubling
    half = _line("half", 0.3, "faster", decided=True)
    assert headline_line([big, half]) is half
    assert headline_line([base]) is None


def test_the_headline_says_the_verdicts_word_and_its_digits() -> None:
    line = _line("deferred", 2.06, "slower", decided=True)
    assert headline_figure(line) == "2.06x"
    words = headline_words(line, "none", "fk-timing-restore").plain
    assert words.splitlines()[0] == "deferred slower than none"
    shift = _line("shifted", None, "slower", decided=True)
    assert headline_figure(shift) == "+0.40"
    assert headline_words(shift, "none", "p").plain.startswith("shifted s slower than none")


def test_fk_timing_restores_headline_is_deferred_slower_at_commit() -> None:
    record = ReplaySource.from_file(FK_TIMING).record
    assert record is not None
    lines = card_lines(record)
    told = headline_line(lines)
    assert told is not None and told.verdict is not None
    # Immediate (2.34×, at load) and deferred (2.32×, at commit) are both slower by as much
    # on the within-round pairs (2.29× and 2.31× pooled): the headline is the larger one,
    # and the deferred line tells the article's story, the COMMIT (the deferred FK check).
    assert told.verdict.word == "slower" and told.variant in ("immediate", "deferred")
    deferred = next(line for line in lines if line.variant == "deferred")
    assert deferred.verdict is not None and deferred.verdict.word == "slower"
    words = headline_words(deferred, "none", record.profile.name).plain.splitlines()
    assert words[1].startswith(deferred.moved) and "commit" in deferred.moved.lower()


def _wrapped(text: str, width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


@pytest.mark.parametrize("width", [30, 46, 60])
def test_the_card_fits_the_rows_it_is_given_counting_wrapped_lines(width: int) -> None:
    # At 100x30 in the presenter layout the card's pane is 46 wide and 17 high, and the
    # card's title wraps: counted as one row, the roomy form was chosen and scrolled.
    record = ReplaySource.from_file(FK_TIMING).record
    assert record is not None
    compact = _wrapped(render_card(record, width, rows=1).plain, width)
    for rows in range(compact, compact + 12):
        drawn = _wrapped(render_card(record, width, rows=rows).plain, width)
        assert drawn <= rows, f"{drawn} rows drawn in {rows} at width {width}"
