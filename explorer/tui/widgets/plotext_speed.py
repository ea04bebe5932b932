"""Three of plotext's drawing helpers, rewritten to give the same answer in a third of the time.

A line chart in plotext is a list of points in canvas pixels (`get_matrix_data` maps data
to them); `get_lines` fills each segment with the pixels between its ends, and `hd_group`
packs pixels into braille cells. All three are written for every kind of input (strings,
None, NaN, mixed marker sizes) and pay for it per pixel: at 80x24 they were half of building
the pg_stat_io chart (~15 ms), which a chart key and every second of a live run paid.

The versions here take the common case — integer pixels, one marker size per signal — and
hand anything else to plotext's own function, so what is drawn never changes
(`tests/unit/test_plotext_speed.py` compares the two on random input). `install()` puts
them in plotext's utility module, where its build looks them up on every call — only on the
plotext release they were written against (`PLOTEXT_VERSION`), and `Overlay` draws only there
too (on another release it hands every rule and text to plotext): this module is the one
place pgwx replaces anything of plotext's. The patch as offered to plotext, with its
measurement, is in docs/development.md ("plotext speed-ups, as a patch for plotext").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from plotext import _utility as plotext_utility

PLOTEXT_VERSION = "5.3.2"
"""The plotext release these helpers and `Overlay` were written against and checked with
(`tests/unit/test_plotext_speed.py`); `install` leaves any other release alone."""

ORIGINAL: dict[str, Callable[..., Any]] = {
    "get_lines": plotext_utility.get_lines,
    "hd_group": plotext_utility.hd_group,
    "get_matrix_data": plotext_utility.get_matrix_data,
}
"""plotext's own functions, for the cases the fast ones hand back and for the tests."""


def _ints(values: Sequence[object]) -> bool:
    return set(map(type, values)) <= {int}


def _numbers(values: Sequence[object]) -> bool:
    """Ints and floats, none of them NaN (plotext passes those through untouched)."""
    return set(map(type, values)) <= {int, float} and all(v == v for v in values)


def _same(values: list[Any]) -> bool:
    return not values or values.count(values[0]) == len(values)


def get_matrix_data(data: list[Any], lim: list[float], bins: int) -> list[Any]:
    """plotext's `get_matrix_data`: data to canvas pixels, rounded as plotext rounds
    (to 8 decimals, halves up) before the floor."""
    if not _numbers(data):
        return ORIGINAL["get_matrix_data"](data, lim, bins)
    low, high = lim[0], lim[1]
    span = high - low
    scale = 10**8
    unscale = 10 ** (-8)
    out = []
    for el in data:
        n = (0.5 + (bins - 1) * (el - low) / span) * scale
        f = math.floor(n)
        out.append(math.floor((f if n - f < 0.5 else math.ceil(n)) * unscale))
    return out


def get_lines(x: list[Any], y: list[Any], *other: list[Any]) -> list[list[Any]]:
    """plotext's `get_lines`: the pixels from each point to the next (the last point once),
    with the point's marker, colour and style repeated along its segment."""
    if not (x and _ints(x) and _ints(y)) or any(len(o) != len(x) for o in other):
        return ORIGINAL["get_lines"](x, y, *other)
    xl: list[int] = []
    yl: list[int] = []
    counts: list[int] = []
    for n in range(len(x) - 1):
        x0, x1, y0, y1 = x[n], x[n + 1], y[n], y[n + 1]
        steps = max(abs(x1 - x0), abs(y1 - y0))  # pixels before the next point
        counts.append(steps)
        if steps:
            # plotext's linspace(x0, x1, steps + 1) without its last value, each truncated.
            sx = (x1 - x0) / steps
            sy = (y1 - y0) / steps
            xl.extend([int(x0 + k * sx) for k in range(steps)])
            yl.extend([int(y0 + k * sy) for k in range(steps)])
    xl.append(x[-1])
    yl.append(y[-1])
    ol: list[list[Any]] = []
    for values in other:
        if _same(values):  # one marker, colour or style for the whole line: the usual case
            ol.append([values[0]] * len(xl))
            continue
        out: list[Any] = []
        for value, steps in zip(values, counts, strict=False):
            out.extend([value] * steps)
        out.append(values[-1])
        ol.append(out)
    return [xl, yl, *ol]


def hd_group(
    x: list[Any], y: list[Any], xf: list[int], yf: list[int]
) -> tuple[list[Any], list[Any], list[tuple[int, ...]]]:
    """plotext's `hd_group`: pixels packed into cells of `xf` by `yf` sub-pixels; per cell its
    column, row and the sub-pixels lit (rows top to bottom, as plotext's marker tables read)."""
    if not x or not (_ints(x) and _ints(y)) or len(set(xf)) != 1 or len(set(yf)) != 1:
        return ORIGINAL["hd_group"](x, y, xf, yf)
    fx, fy = xf[0], yf[0]
    size = fx * fy
    cells: dict[tuple[int, int], int] = {}
    for px, py in zip(x, y, strict=True):
        key = (px // fx, py // fy)
        # The sub-pixel's place in plotext's marker key: rows top to bottom, then columns.
        cells[key] = cells.get(key, 0) | 1 << ((fy - 1 - py % fy) * fx + px % fx)
    xs = [key[0] for key in cells]
    ys = [key[1] for key in cells]
    return xs, ys, [_lit(mask, size) for mask in cells.values()]


_MASKS: dict[tuple[int, int], tuple[int, ...]] = {}


def _lit(mask: int, size: int) -> tuple[int, ...]:
    """A bit mask as plotext's tuple of 0s and 1s (bit 0 first)."""
    key = (mask, size)
    if key not in _MASKS:
        _MASKS[key] = tuple(mask >> i & 1 for i in range(size))
    return _MASKS[key]


@dataclass
class Overlay:
    """The data, vertical rules and one-line texts of a chart, drawn onto plotext's matrix
    after its build exactly where and as plotext would have drawn them; plotext draws the
    frame, the ticks and the title.

    plotext handles each rule and text inside its build at a cost per text, per rule and per
    canvas column (the frame's tick marks test every column against every rule), and each
    point of a line through a dozen per-pixel list passes: a chart's phase rules and its
    ribbon of variant letters (~100 texts) were half of building the pg_stat_io chart at
    80x24, and its lines most of the rest. Here a rule or text costs a few cells, a line its
    pixels once. `tests/unit/test_plotext_speed.py` builds random charts both ways and
    compares them cell by cell.
    """

    rules: list[tuple[float, Any]] = field(default_factory=list)
    """(x, colour) per rule."""
    texts: list[tuple[str, float, float, Any, Any, Any, str]] = field(default_factory=list)
    """(text, x, y, colour, background, style, alignment) per text."""
    signals: list[tuple[list[Any], list[Any], str, Any, Any, bool]] = field(default_factory=list)
    """(x, y, marker, colour, style, lines) per plotext signal taken out of its build."""
    active: bool = field(default_factory=lambda: fits())
    """Whether the overlay draws (on the plotext release it was written for, `fits`); on
    another, every rule and text goes to plotext as it is given and plotext draws it all."""

    def vline(self, figure: Any, x: float, color: Any = None) -> None:
        """`figure.vline(x, color)`, drawn by `draw`."""
        if not self.active:
            figure.vline(x, color=color)
            return
        self.rules.append((x, figure.monitor.check_color(color)))

    def text(
        self, figure: Any, text: str, x: float, y: float, color: Any = None, alignment: Any = None
    ) -> None:
        """`figure.text(text, x, y, color=color, alignment=alignment)`, drawn by `draw`: its
        colours as plotext takes them at the call (the canvas colour of that moment)."""
        if not self.active:
            figure.text(text, x, y, color=color, alignment=alignment)
            return
        monitor = figure.monitor
        colour = color if plotext_utility.is_color(color) else monitor.next_color()
        self.texts.append(
            (
                str(text),
                x,
                y,
                colour,
                monitor.canvas_color,
                monitor.check_style(None),
                monitor.check_alignment(alignment),
            )
        )

    def clear(self) -> None:
        self.rules.clear()
        self.texts.clear()
        self.signals.clear()

    def fit(self, figure: Any) -> None:
        """Before the build: fit the axes as plotext would to the data, the rules and the
        texts (these are not in the figure), then take the signals out of the build."""
        if not self.active:
            return
        monitor = figure.monitor
        takes = _can_take(monitor)
        if not (self.rules or self.texts or takes):
            return
        for limits, sides, side, data, extra in (
            (
                monitor.xlim,
                monitor.xside,
                monitor.default.xside[0],
                monitor.x,
                [x for x, _ in self.rules] + [t[1] for t in self.texts],
            ),
            (
                monitor.ylim,
                monitor.yside,
                monitor.default.yside[0],
                monitor.y,
                [t[2] for t in self.texts],
            ),
        ):
            if None not in limits[0] or not (extra or takes):
                continue
            values = [v for s, points in enumerate(data) if sides[s] is side for v in points]
            fitted = plotext_utility.get_lim(values + extra)
            limits[0] = [fitted[i] if limits[0][i] is None else limits[0][i] for i in (0, 1)]
        if takes:
            self._take(monitor)

    def _take(self, monitor: Any) -> None:
        """Each signal's points out of plotext's build, drawn by `draw` instead; in their
        place one point far above the canvas, which plotext drops, so that the axes are still
        'in use' and ticked as before."""
        (x0, _), (y0, y1) = monitor.xlim[0], monitor.ylim[0]
        above = y1 + 10 * abs(y1 - y0) + 1
        for s in range(len(monitor.x)):
            self.signals.append(
                (
                    monitor.x[s],
                    monitor.y[s],
                    monitor.marker[s][0],
                    monitor.color[s][0],
                    monitor.style[s][0],
                    monitor.lines[s],
                )
            )
            monitor.x[s], monitor.y[s] = [x0], [above]
            for per_point in (monitor.marker, monitor.color, monitor.style):
                per_point[s] = per_point[s][:1]

    @staticmethod
    def _signal(
        matrix: Any,
        signal: tuple[list[Any], list[Any], str, Any, Any, bool],
        xlim: list[float],
        ylim: list[float],
        width: int,
        height: int,
        col_start: int,
        row_start: int,
    ) -> None:
        """One signal's cells, as plotext's build draws them: points to sub-pixels (2x4 a
        cell for braille), the pixels between them when it has lines, packed into cells,
        those outside the canvas dropped; each cell takes the signal's marker and colours."""
        xs, ys, mark, colour, style, lines = signal
        hd = mark == "braille"
        fx, fy = (2, 4) if hd else (1, 1)
        px = get_matrix_data(xs, xlim, width * fx)
        py = get_matrix_data(ys, ylim, height * fy)
        if lines:
            px, py = get_lines(px, py)
        cells: dict[tuple[int, int], int] = {}
        for x, y in zip(px, py, strict=True):
            key = (x // fx, y // fy)
            cells[key] = cells.get(key, 0) | 1 << ((fy - 1 - y % fy) * fx + x % fx)
        markers, fore, styles = matrix.marker, matrix.fullground, matrix.style
        for (x, y), mask in cells.items():
            if 0 <= x < width and 0 <= y < height:
                row, col = row_start + y, col_start + x
                if 0 <= row < matrix.rows and 0 <= col < matrix.cols:
                    markers[row][col] = _braille(mask) if hd else mark
                    if colour is not None:
                        fore[row][col] = colour
                    if style is not None:
                        styles[row][col] = style

    def draw(self, figure: Any) -> None:
        """After the build: the data, the rules (under the data), their marks on the frame,
        the texts."""
        if not (self.rules or self.texts or self.signals):
            return
        monitor = figure.monitor
        matrix = monitor.matrix
        cols, rows = matrix.Cols_canvas, matrix.Rows_canvas
        col_start, width, row_start, height = cols.start, len(cols), rows.start, len(rows)
        xlim = monitor.xlim[0]
        if width > 0 and height > 0:
            for signal in self.signals:
                self._signal(
                    matrix, signal, xlim, monitor.ylim[0], width, height, col_start, row_start
                )
        if self.rules and None not in xlim:
            self._draw_rules(monitor, matrix, xlim)
        self._draw_texts(monitor, matrix)

    def _draw_rules(self, monitor: Any, matrix: Any, xlim: list[float]) -> None:
        """The vertical rules, under the data, and their marks on the frame."""
        cols, rows = matrix.Cols_canvas, matrix.Rows_canvas
        col_start, width, row_start, height = cols.start, len(cols), rows.start, len(rows)
        marker, fore = matrix.marker, matrix.fullground
        space = plotext_utility.space
        at = get_matrix_data([x for x, _ in self.rules], xlim, width)
        # One rule per column: the last drawn there (its colour) is the one that shows.
        last = dict(zip(at, (colour for _, colour in self.rules), strict=True))
        for tick, colour in last.items():
            col = col_start + tick
            if not 0 <= col < matrix.cols:
                continue
            for row in range(max(row_start, 0), min(row_start + height, matrix.rows)):
                # plotext draws rules before the data: a cell the data took stays the data's.
                if row in rows and col in cols and marker[row][col] != space:
                    continue
                marker[row][col] = "│"
                if colour is not None:
                    fore[row][col] = colour
        if monitor.xaxes[0] and height >= -1:
            # The frame above and below marks each rule's column (over an x tick too).
            for tick in last:
                if 0 <= tick < width:
                    for row, mark, over in (
                        (row_start - 1, "┴", ("─", "┬")),
                        (row_start + height, "┬", ("─", "┴")),
                    ):
                        if 0 <= row < matrix.rows and marker[row][col_start + tick] in over:
                            marker[row][col_start + tick] = mark

    def _draw_texts(self, monitor: Any, matrix: Any) -> None:
        """The texts, over everything, as plotext's insert_element places them."""
        cols, rows = matrix.Cols_canvas, matrix.Rows_canvas
        col_start, width, row_start, height = cols.start, len(cols), rows.start, len(rows)
        xlim, ylim = monitor.xlim[0], monitor.ylim[0]
        marker, fore = matrix.marker, matrix.fullground
        texts = self.texts
        cols_at = get_matrix_data([t[1] for t in texts], xlim, width) if width > 0 else []
        rows_at = get_matrix_data([t[2] for t in texts], ylim, height) if height > 0 else []
        for n, (text, _, _, colour, background, style, alignment) in enumerate(texts):
            col = col_start + (cols_at[n] if width > 0 else 0)
            row = row_start + (rows_at[n] if height > 0 else 0)
            size = len(text)
            if alignment == "center":
                col -= size // 2
            elif alignment == "right":
                col -= size - 1
            elif alignment != "left":
                col = plotext_utility.correct_coord(matrix.get_marker_row(row), text, col)
            for i, char in enumerate(text):
                if col + i in cols and row in rows and 0 <= col + i < matrix.cols:
                    # plotext's insert_element: a colour given as None leaves the cell's own.
                    marker[row][col + i] = char
                    if colour is not None:
                        fore[row][col + i] = colour
                    if background is not None:
                        matrix.background[row][col + i] = background
                    if style is not None:
                        matrix.style[row][col + i] = style


def _can_take(monitor: Any) -> bool:
    """Whether `Overlay` draws every signal as plotext would: lines or points of one marker
    (braille or a character), colour and style each, numbers, on the default axes, linear,
    unfilled, unlabelled, not reversed; else plotext draws them all."""
    if not monitor.x:
        return False
    default = monitor.default
    if (
        monitor.xscale[0] != default.xscale[0]
        or monitor.yscale[0] != default.yscale[0]
        or any(monitor.x_date)
        or any(monitor.y_date)
        or monitor.xdirection[0] != 1
        or monitor.ydirection[0] != 1
    ):
        return False
    for s in range(len(monitor.x)):
        x, y, marker = monitor.x[s], monitor.y[s], monitor.marker[s]
        if not (
            x
            and len(x) == len(y)
            and _numbers(x)
            and _numbers(y)
            and monitor.xside[s] is default.xside[0]
            and monitor.yside[s] is default.yside[0]
            and monitor.fillx[s] is False
            and monitor.filly[s] is False
            and monitor.label[s] is None
            and _same(marker)
            and _same(monitor.color[s])
            and _same(monitor.style[s])
            and (marker[0] == "braille" or marker[0] not in plotext_utility.hd_symbols)
        ):
            return False
    return True


_BRAILLE: dict[int, str] = {}
"""Bit mask (see `hd_group`) → plotext's braille character for it."""


def _braille(mask: int) -> str:
    if mask not in _BRAILLE:
        _BRAILLE[mask] = plotext_utility.get_hd_marker(_lit(mask, 8))
    return _BRAILLE[mask]


def installed_version() -> str | None:
    """The plotext release installed (None when its metadata cannot be found)."""
    try:
        return metadata.version("plotext")
    except metadata.PackageNotFoundError:
        return None


def fits(version: str | None = None) -> bool:
    """Whether the plotext installed (or `version`) is the release these were written
    against: they copy its helpers' answers and draw into its matrix as its build does."""
    return (version or installed_version()) == PLOTEXT_VERSION


def install() -> bool:
    """Use these in plotext's builds (idempotent), only on the plotext they were written
    for: on another release plotext's own helpers stay, and what it draws is its own.

    Returns:
        Whether they are in use.
    """
    if not fits():
        return False
    plotext_utility.get_lines = get_lines
    plotext_utility.hd_group = hd_group
    plotext_utility.get_matrix_data = get_matrix_data
    return True
