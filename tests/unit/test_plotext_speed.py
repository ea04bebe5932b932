"""The fast plotext helpers draw exactly what plotext's own do (issue 21: they were half of
building a line chart), on the inputs a chart gives them and on the ones they hand back."""

from __future__ import annotations

import random
from typing import Any

import pytest
from textual_plotext.plot import Plot

from explorer.tui.widgets import plotext_speed
from explorer.tui.widgets.chart import matrix_text
from explorer.tui.widgets.plotext_speed import (
    ORIGINAL,
    Overlay,
    get_lines,
    get_matrix_data,
    hd_group,
)


def pixels(rng: random.Random, n: int, top: int) -> list[int]:
    return [rng.randrange(-3, top) for _ in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_get_lines_is_plotexts(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 2, 5, 60])
    x, y = sorted(pixels(rng, n, 150)), pixels(rng, n, 40)
    markers = [rng.choice(["braille", "o", "sd"]) for _ in range(n)]
    colors = [rng.choice([(230, 159, 0), "gray", 4]) for _ in range(n)]
    styles = ["default"] * n
    assert get_lines(x, y, markers, colors, styles) == ORIGINAL["get_lines"](
        x, y, markers, colors, styles
    )


@pytest.mark.parametrize("seed", range(40))
def test_hd_group_is_plotexts(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 7, 300])
    x, y = pixels(rng, n, 150), pixels(rng, n, 40)
    fx, fy = rng.choice([(2, 4), (2, 2), (2, 3)])
    assert hd_group(x, y, [fx] * n, [fy] * n) == ORIGINAL["hd_group"](x, y, [fx] * n, [fy] * n)


@pytest.mark.parametrize("seed", range(40))
def test_get_matrix_data_is_plotexts(seed: int) -> None:
    rng = random.Random(seed)
    data = [rng.uniform(-5, 105) for _ in range(50)] + [0, 100, 50, 7]
    lim = [rng.choice([0.0, -1.0, 3.3]), rng.choice([100.0, 110.0, 57.5])]
    bins = rng.choice([10, 40, 152, 280])
    # Exact halves and values at 8 decimals: where the rounding rule shows.
    data += [lim[0] + (k + 0.5) / (bins - 1) * (lim[1] - lim[0]) for k in range(5)]
    assert get_matrix_data(data, lim, bins) == ORIGINAL["get_matrix_data"](data, lim, bins)


def test_what_the_fast_ones_do_not_take_plotext_still_draws() -> None:
    x, y = [0, 3.5, None], [1, 2, 3]  # not integer pixels
    other = (["o", "o", "o"],)
    assert get_lines(x, y, *other) == ORIGINAL["get_lines"](x, y, *other)
    floats = ([0.0, 1.0, 5.0], [0, 1, 2], [2, 2, 2], [4, 4, 4])
    assert hd_group(*floats) == ORIGINAL["hd_group"](*floats)
    gaps = [1.0, float("nan"), None, 3]
    assert get_matrix_data(gaps, [0, 4], 10) == ORIGINAL["get_matrix_data"](gaps, [0, 4], 10)


def chart(seed: int) -> str:
    """A pg_stat_io-like chart: six braille series, rules, labels; as text with styles."""
    rng = random.Random(seed)
    plt = Plot()
    for s in range(6):
        xs = [t * 0.5 for t in range(200)]
        ys = [abs(rng.gauss(100 * s, 40)) for _ in xs]
        plt.plot(xs, ys, marker="braille" if s % 3 else "o", color=(40 * s, 120, 200))
    plt.vline(50, color="gray")
    plt.text("C", 50, 500, color="gray", alignment="left")
    plt.title("pg_stat_io operations/s")
    plt.plotsize(76, 10)
    plt._set_size(76, 10)
    plt._set_sizes()  # type: ignore[attr-defined]
    plt._build_matrix()  # type: ignore[attr-defined]
    text = matrix_text(plt.monitor.matrix)  # type: ignore[attr-defined]
    return repr([(text.plain, [(sp.start, sp.end, str(sp.style)) for sp in text.spans])])


def test_a_chart_built_with_them_is_the_chart_plotext_builds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fast = [chart(seed) for seed in range(3)]
    from plotext import _utility

    monkeypatch.setattr(_utility, "get_lines", ORIGINAL["get_lines"])
    monkeypatch.setattr(_utility, "hd_group", ORIGINAL["hd_group"])
    assert [chart(seed) for seed in range(3)] == fast
    plotext_speed.install()
    assert _utility.get_lines is get_lines and _utility.hd_group is hd_group


def _chart(rng: random.Random) -> dict[str, object]:
    """A random chart as TimeChart draws them: lines or scattered cells (braille, a glyph,
    plotext's small dot), limits set or not (data outside them too), rules and texts
    anywhere (inside the data, at its edges, outside, on one point)."""
    width, height = rng.choice([(20, 8), (74, 17), (114, 29), (9, 5), (60, 3)])
    n = rng.choice([1, 2, 9, 80])
    x0 = rng.choice([0.0, 3.0, 120.5])
    xs = sorted(x0 + rng.uniform(0, 60) for _ in range(n))
    series = [
        (
            xs,
            [rng.choice([0.0, rng.uniform(0, 500)]) for _ in xs],
            rng.choice(["braille", "o", "sd"]),
            rng.choice([None, (230, 159, 0), "gray"]),
        )
        for _ in range(rng.choice([1, 3]))
    ]
    low, high = xs[0], xs[-1]
    span = (high - low) or 1.0
    near = [low, high, low + span / 2, low - span / 3, high + span / 4, low + 1e-9]
    return {
        "size": (width, height),
        "series": series,
        "scatter": rng.random() < 0.3,
        "ylim": rng.choice([None, (0.0, 600.0), (-40.0, 550.0)]),
        "xlim": rng.choice([None, None, (low - 0.5, high + 0.5), (low + span / 4, high)]),
        "theme_first": rng.random() < 0.5,
        "rules": [
            (rng.choice(near), rng.choice(["gray", (230, 159, 0)]))
            for _ in range(rng.choice([0, 1, 5]))
        ],
        "texts": [
            (
                rng.choice(["C", "V2", "d", "Com", "─"]),
                rng.choice(near),
                rng.choice([600.0, -30.0, 250.0, 700.0]),
                rng.choice(["gray", (86, 180, 233), None]),
                rng.choice(["left", "center", "right", "dynamic"]),
            )
            for _ in range(rng.choice([0, 1, 12, 40]))
        ],
    }


def _draw(chart: dict[str, Any], overlay: bool, drawn: Overlay | None = None) -> str:
    """The chart built with plotext's own rules and texts, or with `Overlay` (`drawn`, or a
    new one); as Rich Text with its styles (markers, colours and backgrounds all compared)."""
    plt = Plot()
    drawn = drawn or Overlay()
    if chart["theme_first"]:
        plt.theme("textual-dark")
    for xs, ys, marker, color in chart["series"]:
        if chart["scatter"]:
            plt.scatter(xs, ys, marker=marker, color=color)
        else:
            plt.plot(xs, ys, marker=marker, color=color)
    if chart["ylim"]:
        plt.ylim(*chart["ylim"])
    if chart["xlim"]:
        plt.xlim(*chart["xlim"])
    for x, color in chart["rules"]:
        drawn.vline(plt, x, color) if overlay else plt.vline(x, color=color)
    for text, x, y, color, alignment in chart["texts"]:
        if overlay:
            drawn.text(plt, text, x, y, color=color, alignment=alignment)
        else:
            plt.text(text, x, y, color=color, alignment=alignment)
    if not chart["theme_first"]:
        plt.theme("textual-dark")
    width, height = chart["size"]
    plt.plotsize(width, height)
    plt._set_size(width, height)
    figure: Any = plt
    figure._set_sizes()
    if overlay:
        drawn.fit(figure)
    figure._build_matrix()
    if overlay:
        assert drawn.signals or not drawn.active, "the overlay draws the data itself"
        drawn.draw(figure)
    text = matrix_text(figure.monitor.matrix)
    return repr((text.plain, [(s.start, s.end, str(s.style)) for s in text.spans]))


@pytest.mark.parametrize("seed", range(60))
def test_the_overlay_draws_what_plotexts_lines_rules_and_texts_draw(seed: int) -> None:
    chart = _chart(random.Random(seed))
    assert _draw(chart, overlay=True) == _draw(chart, overlay=False)


def test_the_overlay_draws_something() -> None:
    """The comparison above is not between two empty charts: a line, a rule, a text."""
    xs = [10.0, 20.0, 30.0]
    chart = {
        "size": (40, 12),
        "series": [(xs, [0.0, 400.0, 100.0], "braille", (230, 159, 0))],
        "scatter": False,
        "ylim": (0.0, 500.0),
        "xlim": None,
        "theme_first": False,
        "rules": [(20.0, "gray")],
        "texts": [("Q", 12.0, 450.0, "gray", "left")],
    }
    drawn = _draw(chart, overlay=True)
    assert "Q" in drawn and "│" in drawn and "#e69f00" in drawn
    assert any(chr(c) in drawn for c in range(0x2801, 0x2900))  # braille


def test_they_replace_plotexts_helpers_only_on_the_release_written_for() -> None:
    from importlib import metadata

    assert plotext_speed.fits(plotext_speed.PLOTEXT_VERSION)
    assert not plotext_speed.fits("5.2.8") and not plotext_speed.fits("6.0.0")
    # The plotext installed is the one pinned for: the speed-ups are in use.
    assert metadata.version("plotext") == plotext_speed.PLOTEXT_VERSION
    assert plotext_speed.install() is True


def test_on_another_plotext_release_plotext_draws_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Neither the helpers nor the overlay touch a plotext they were not written for: its
    own functions stay in its utility module and it draws every rule and text itself."""
    from plotext import _utility

    for name, own in ORIGINAL.items():
        monkeypatch.setattr(_utility, name, own)  # as a fresh process on that release has them
    monkeypatch.setattr(plotext_speed, "installed_version", lambda: "6.0.0")
    assert plotext_speed.install() is False
    assert all(getattr(_utility, name) is own for name, own in ORIGINAL.items())
    overlay = Overlay()
    assert not overlay.active
    chart = next(
        c for c in map(_chart, map(random.Random, range(100))) if c["rules"] and c["texts"]
    )
    assert _draw(chart, overlay=True, drawn=overlay) == _draw(chart, overlay=False)
    assert not (overlay.rules or overlay.texts or overlay.signals)  # plotext drew them
