"""How a chart is built: stacked bars as one scatter per part, and plotext's cell matrix read
straight into Rich Text — each drawing what the slower way drew (issue 21: a chart key's
time was mostly plotext's per-bar rectangles and the ANSI round trip)."""

from __future__ import annotations

import itertools
import math
import random

from rich.text import Text
from textual_plotext.plot import Plot

from explorer.tui.widgets.chart import PALETTE, bar_cells, matrix_text


def figure(width: int = 60, height: int = 14) -> Plot:
    """A plotext figure with lines of two colours, a rule, a label and a title."""
    plt = Plot()
    rng = random.Random(3)
    plt.plot(
        [t for t in range(80)],
        [rng.random() * 10 for _ in range(80)],
        marker="braille",
        color=PALETTE[0][1],
    )
    plt.plot([t for t in range(80)], [5 + math.sin(t / 7) for t in range(80)], color=PALETTE[4][1])
    plt.vline(40, color="gray")
    plt.text("C", 40, 9.5, color="gray", alignment="left")
    plt.title("operations/s")
    plt.xlabel("s")
    plt.plotsize(width, height)
    plt._set_size(width, height)
    return plt


def test_the_matrix_read_directly_is_the_ansi_canvas_parsed_back() -> None:
    plt = figure()
    canvas = plt.build()  # sets the matrix and writes its ANSI canvas
    direct = matrix_text(plt.monitor.matrix)
    parsed = Text.from_ansi(canvas)
    assert direct.plain == parsed.plain
    assert len(direct.plain.splitlines()) == 14

    # Cell by cell the same style (span boundaries may differ where runs merge).
    def styles(text: Text) -> list[str]:
        out = [""] * len(text.plain)
        for span in text.spans:
            for i in range(span.start, span.end):
                out[i] = str(span.style)
        return out

    assert styles(direct) == styles(parsed)
    assert any("#e69f00" in s or "rgb(230,159,0)" in s for s in styles(direct))


def cells(xs: list[float], ys: list[float], bars: int, columns: int, rows: int, top: float):  # type: ignore[no-untyped-def]
    """Points → the (column, row) cells plotext would light for them."""
    height = top * 1.1
    return {
        (math.floor((x + 0.5) / bars * columns), math.floor(y / height * rows))
        for x, y in zip(xs, ys, strict=True)
    }


def test_each_part_of_each_bar_covers_its_own_cells() -> None:
    parts = [[4.0, 0.0, 2.0, 8.0], [4.0, 1.0, 0.05, 0.0]]  # bottom part, then the one on top
    columns, rows, top = 16, 10, 8.0
    drawn = bar_cells(parts, columns, rows, top)
    assert len(drawn) == 2
    for xs, _ in drawn:
        assert all(-0.5 <= x < 3.5 for x in xs)
    bottom = cells(*drawn[0], bars=4, columns=columns, rows=rows, top=top)
    upper = cells(*drawn[1], bars=4, columns=columns, rows=rows, top=top)
    # Every column of bar 0 (columns 0-3), from the floor to 4 of 8.8 units (rows 0-4).
    assert {(c, r) for c in range(4) for r in range(4)} <= bottom
    assert not any(c in range(4, 8) for c, _ in bottom)  # bar 1's bottom part is 0
    assert {(c, 0) for c in range(4, 8)} <= upper  # its upper part, 1 unit: the floor row
    # A part far below a row still shows (bar 2's 0.05), a part of 0 never does (bar 3).
    assert any(c in range(8, 12) for c, _ in upper)
    assert not any(c in range(12, 16) for c, _ in upper)
    # The upper part starts where the lower one ends.
    assert min(y for x, y in zip(*drawn[1], strict=True) if x < 0.5) >= 4.0


def test_points_are_at_most_half_a_cell_apart() -> None:
    xs, ys = bar_cells([[10.0, 10.0, 10.0]], 30, 12, 10.0)[0]
    column = 3 / 30  # three bars over 30 columns: a column is a tenth of a bar
    row = 10.0 * 1.1 / 12  # the axis runs to a tenth above the top
    xs_in_order = sorted(set(xs))
    assert max(b - a for a, b in itertools.pairwise(xs_in_order)) <= column / 2 + 1e-9
    ys_in_order = sorted(set(ys))
    assert max(b - a for a, b in itertools.pairwise(ys_in_order)) <= row / 2 + 1e-9


def test_no_bars_no_points() -> None:
    assert bar_cells([[], []], 30, 12, 0.0) == [([], []), ([], [])]
