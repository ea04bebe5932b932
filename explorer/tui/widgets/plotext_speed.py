"""Three of plotext's drawing helpers, rewritten to give the same answer in a third of the time.

A line chart in plotext is a list of points in canvas pixels (`get_matrix_data` maps data
to them); `get_lines` fills each segment with the pixels between its ends, and `hd_group`
packs pixels into braille cells. All three are written for every kind of input (strings,
None, NaN, mixed marker sizes) and pay for it per pixel: at 80x24 they were half of building
the pg_stat_io chart (~15 ms), which a chart key and every second of a live run paid.

The versions here take the common case — integer pixels, one marker size per signal — and
hand anything else to plotext's own function, so what is drawn never changes
(`tests/unit/test_plotext_speed.py` compares the two on random input). `install()` puts
them in plotext's utility module, where its build looks them up on every call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from plotext import _utility as plotext_utility

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


def install() -> None:
    """Use these in plotext's builds (idempotent)."""
    plotext_utility.get_lines = get_lines
    plotext_utility.hd_group = hd_group
    plotext_utility.get_matrix_data = get_matrix_data
