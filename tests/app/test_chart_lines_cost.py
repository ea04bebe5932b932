"""Cutting a chart into lines makes one style per colour, not three per run (issue 39, point 7).

Each run of cells of a chart (~1,200 at 160x45) took two Style additions and a meta-only
Style for its offset: a third of cutting the chart into lines, paid on every chart key. Now
the chart's style under each colour is added once and the offset is set in one step
(`at_offset`), to an equal style with the same meta. Counted, not timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.chart import at_offset
from tests.support.app import replay_app, settle


@pytest.mark.parametrize(
    "style",
    [
        Style(color="#e69f00", bgcolor="#1e1e1e"),
        Style(color="red", bold=True, italic=False),
        Style(bgcolor="blue", dim=True, underline=True),
        Style(color="#56b4e9") + Style.from_meta({"kept": 1}),  # meta of its own
        Style(color="green", link="https://example.org"),  # a link
        Style(),  # null
    ],
)
def test_at_offset_is_rich_s_own_addition(style: Style) -> None:
    made = at_offset(style, 7, 3)
    theirs = style + Style.from_meta({"offset": (7, 3)})
    assert made == theirs and hash(made) == hash(theirs)
    assert made.meta == theirs.meta and made.meta["offset"] == (7, 3)
    assert made.color == theirs.color and made.bgcolor == theirs.bgcolor
    assert str(made) == str(theirs)


async def test_cutting_a_chart_adds_styles_per_colour_not_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path).run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        chart = lab.query_one(ActivityPane).chart
        await pilot.press("i")
        await pilot.pause(0.1)
        base = chart.visual_style.rich_style
        # The lines as they were cut before: two additions and a meta-only style per run.
        before = []
        for y, row in enumerate(chart._render_spec()[: chart.size.height]):
            segments, x = [], 0
            for part, style in row:
                segments.append(Segment(part, base + style + Style.from_meta({"offset": (x, y)})))
                x += len(part)
            before.append(Strip(segments).adjust_cell_length(chart.size.width, base))
        runs = sum(len(list(strip)) for strip in before)
        assert runs > 200  # a chart of many runs of cells
        added: list[int] = []
        metas: list[int] = []
        add, from_meta = Style.__add__, Style.from_meta.__func__  # type: ignore[attr-defined]

        def counted_add(self: Style, other: Style | None) -> Style:
            added.append(1)
            return add(self, other)

        def counted_meta(cls: type[Style], meta: dict[str, object] | None) -> Style:
            metas.append(1)
            return from_meta(cls, meta)

        monkeypatch.setattr(Style, "__add__", counted_add)
        monkeypatch.setattr(Style, "from_meta", classmethod(counted_meta))
        lines = chart._strips(base)
        monkeypatch.undo()
        colours = {segment.style.color for strip in lines for segment in strip if segment.style}
        assert metas == []  # no meta-only style per run
        assert 0 < len(added) <= 2 * len(colours) + 10 < runs  # per colour, not per run
        # The same lines as before, offsets and all.
        assert [list(strip) for strip in lines] == [list(strip) for strip in before]
        assert [[s.style.meta for s in strip] for strip in lines] == [
            [s.style.meta for s in strip] for strip in before
        ]
