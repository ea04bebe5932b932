"""The end card tells the run's story with the table's numbers (issue 21).

On the shipped fk-timing-restore recording the card once read `deferred 2.31× slower ·
fsyncs 34 → 36`: the fsync count is beside the point; the story is that the deferred FK check
lands on COMMIT (`commit 5.4 ms → 3.60 s`). Each candidate's card line must carry the phase
that moved most with the baseline's and its own median — the numbers the results table shows
for that phase — and a mechanism never comes before it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.analysis.card import seconds_text
from explorer.analysis.judge import TOTAL
from explorer.analysis.report import SummaryRow, summarize, to_markdown
from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.summary import SummaryCard, render_card
from tests.support import recorded
from tests.support.app import wait_for

RECORDING = recordings_dir() / "fk-timing-restore.pgwx"


def moved_most(rows: list[SummaryRow], baseline: str, variant: str) -> tuple[str, float, float]:
    """From the table's rows alone: the phase whose median moved most from the baseline's."""
    base = {r.phase: r.median for r in rows if r.variant == baseline and r.median is not None}
    mine = {
        r.phase: r.median
        for r in rows
        if r.variant == variant and r.median is not None and r.phase not in (TOTAL, "—")
    }
    best = max(
        (p for p in mine if p in base), key=lambda p: abs(mine[p] - base[p])
    )  # both recorded movers (load, commit) are phases the baseline ran
    return best, base[best], mine[best]


def variant_block(lines: list[str], variant: str, names: list[str]) -> str:
    """The card's text for one variant: from its name to the next variant's (or the end)."""
    start = next(n for n, line in enumerate(lines) if re.search(rf"^{variant}( |$)", line))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if any(re.search(rf"^{other}( |$)", line) for other in names) or "Enter" in line:
            break
        block.append(line)
    return " ".join(block)


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_card_line_is_the_tables_phase_that_moved_most(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    source = ReplaySource.from_file(RECORDING)
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), ascii=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.lab.view.status == "finished", 60)
        await wait_for(pilot, lambda: app.lab.query_one(SummaryCard).display, 10)
        await pilot.pause(0.3)
        record = app.lab.view.record
        assert record is not None
        rows = summarize(record)
        card = app.lab.query_one(SummaryCard)
        # What the card draws, line by line, as the compositor gets it.
        lines = [strip.text for strip in card.render_lines(card.region.reset_offset)]
        assert card.region.bottom <= app.lab.query_one(DurationPane).region.bottom
        names = [v.name for v in record.profile.variants]
        for variant, phase in (("deferred", "commit"), ("immediate", "load")):
            name, before, after = moved_most(rows, "none", variant)
            assert name == phase  # the recording's story: COMMIT for deferred, load for immediate
            total = next(r for r in rows if r.variant == variant and r.phase == TOTAL)
            assert total.verdict is not None and total.verdict.word == "slower"
            shown = variant_block(lines, variant, names)
            story = f"{name} {seconds_text(before)} → {seconds_text(after)}"
            assert story in shown, shown
            # The verdict, then the phase: the same word and median as the table's total row.
            assert shown.index("slower") < shown.index(story)
            assert seconds_text(total.median) in shown
            # A counter that moved by a few percent is not offered as the reason.
            assert "fsyncs" not in shown
        # The markdown report (what `pgwx report` prints) tells the same story line.
        md = to_markdown(record)
        name, before, after = moved_most(rows, "none", "deferred")
        line = next(x for x in md.splitlines() if x.startswith("- deferred "))
        ratio = line.split()[2]  # the table's ratio, as the card prints it
        assert ratio.endswith("×") and ratio in variant_block(lines, "deferred", names)
        assert f" slower · 6.36 s · {name} {seconds_text(before)} → " in line, line


def test_a_verdict_in_seconds_reads_as_the_table_says_it() -> None:
    """Below the floor (1 ms on pgwx's clock) the table says `−2.17 s faster`; the card once
    said `? faster`."""
    record = recorded.record()
    for trial in record.trials:
        if trial.variant == "unlogged":
            for phase in trial.phases:
                phase.seconds *= 0.0001  # a total under 1 ms: judged in seconds
    row = next(r for r in summarize(record) if r.variant == "unlogged" and r.phase == TOTAL)
    v = row.verdict
    assert v is not None and v.below_floor == "candidate" and v.too_few  # two trials
    card = render_card(record, 120).plain
    line = next(text for text in card.splitlines() if text.startswith("unlogged"))
    # Too few runs for a word: the point in seconds and a '?', never a bare '??'.
    assert v.difference_seconds is not None and v.difference_seconds < 0
    assert f"{v.point_text()}?" in line and v.point_text().startswith("−"), line
    assert "??" not in line
    # With enough runs, the table's point and word.
    record.trials = [t.model_copy(deep=True) for t in record.trials for _ in range(3)]
    row = next(r for r in summarize(record) if r.variant == "unlogged" and r.phase == TOTAL)
    assert row.verdict is not None and not row.verdict.too_few
    line = next(
        text for text in render_card(record, 120).plain.splitlines() if text.startswith("unlogged")
    )
    assert row.verdict.short_label() in line and "faster" in line, line
