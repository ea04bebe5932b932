"""`pgwx`'s first frame is its final layout, footer included (issue 39, point 7: usable ≤ 1 s).

The layout's classes (tabs below 110 columns, the grid from 110x30) were set by the screen's
first resize, which comes after the first frame: that frame stacked every pane, without tabs,
then the whole screen (~130 nodes) was styled again and drawn again. The footer's keys came
later still: Textual's Footer composes nothing until the screen's first bindings signal and
then recomposes after a refresh, so `? Help` and `q Quit` arrived two or three frames in.
What the first frame handed to the terminal shows is read here (no time is asserted).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen

from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.screens.lab import LabScreen, layout_classes
from tests.support.app import replay_app, wait_for


def first_frames(monkeypatch: pytest.MonkeyPatch) -> list[tuple[set[str], list[str]]]:
    """Each frame of the lab handed to the terminal: the screen's classes, its text rows."""
    frames: list[tuple[set[str], list[str]]] = []
    display = App._display

    def kept(self: App[object], screen: Screen[object], renderable: object) -> None:
        display(self, screen, renderable)  # type: ignore[arg-type]
        if renderable is not None and isinstance(screen, LabScreen) and not frames:
            rows = ["".join(s.text for s in strip) for strip in screen._compositor.render_strips()]
            frames.append((set(screen.classes), rows))

    monkeypatch.setattr(App, "_display", kept)
    return frames


def unreachable_app(tmp_path: Path) -> PgwxApp:
    """The live lab, on a server that is not there (the first frame comes before any)."""
    dsn = f"host={tmp_path / 'no-server'} port=1 user=nobody dbname=nothing"
    return PgwxApp(dsn=dsn, store=ResultStore(tmp_path / "results.sqlite"), ascii=False)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
@pytest.mark.parametrize("how", ["live", "replay"])
async def test_the_first_frame_is_laid_out_with_its_footer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], how: str
) -> None:
    frames = first_frames(monkeypatch)
    app = replay_app(tmp_path, 40) if how == "replay" else unreachable_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        assert frames, "no frame of the lab was drawn"
        classes, rows = frames[0]
        wanted = {c for c, on in layout_classes(*size, None).items() if on}
        assert wanted <= classes, (how, size, classes)
        assert "? Help" in rows[-1] and "q Quit" in rows[-1], rows[-1]
        text = "\n".join(rows)
        if size == (80, 24):
            assert " Knobs  Duration  Activity  Results" in text  # the tabs, one pane
            assert text.count("╭─") == 1, text
        else:
            assert "Server activity" in text and "Results" in text and "Knobs" in text


async def test_a_key_at_the_first_frame_does_not_wait_for_the_first_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector's first full collection (~50 ms, before it freezes what start-up built)
    was made just after the first frame; now after `SETTLE_AFTER` seconds with no key."""
    seen: list[tuple[str, bool]] = []
    display = App._display

    def kept(self: App[object], screen: Screen[object], renderable: object) -> None:
        display(self, screen, renderable)  # type: ignore[arg-type]
        if renderable is None or not isinstance(self, PgwxApp):
            return
        seen.append((type(screen).__name__, self.collector.installed))
        if len(seen) == 1:
            self.call_later(self.simulate_key, "question_mark")

    monkeypatch.setattr(App, "_display", kept)
    app = replay_app(tmp_path, 40)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: any(name == "HelpScreen" for name, _ in seen), 10)
        help_drawn = next(installed for name, installed in seen if name == "HelpScreen")
        assert not help_drawn  # no full collection between the first frame and the help
        await wait_for(pilot, lambda: app.collector.installed, 10)  # made once keys stop
