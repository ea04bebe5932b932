"""Every glyph of the live knob form has an ASCII stand-in (issue 39): under `LANG=C` or
`--ascii` the selects' arrow `▼` (Textual's own) reached the terminal as `?` on every knob
row. The connected app, the form focused and a list open: each non-ASCII character drawn has
its own stand-in in the one glyph table, and in ASCII mode none reaches the screen."""

from __future__ import annotations

import html
import re

import pytest

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.glyphs import TRANSLATE, set_ascii
from tests.support.app import connected


def screen_text(app: PgwxApp) -> str:
    """The text of the screenshot SVG, as the terminal would show it."""
    parts = re.findall(r"<text[^>]*>(.*?)</text>", app.export_screenshot(), flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")


@pytest.fixture(autouse=True)
def _unicode_again() -> object:
    """ASCII mode is process-wide: each test starts (and ends) in Unicode."""
    set_ascii(False)
    yield None
    set_ascii(False)


@pytest.mark.parametrize("ascii", [False, True], ids=["unicode", "ascii"])
async def test_the_knob_form_draws_only_marks_with_a_stand_in(
    pg18: Target, store: ResultStore, ascii: bool
) -> None:
    async with PgwxApp(target=pg18, store=store, ascii=ascii).run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await pilot.pause(0.3)
        first = screen_text(pilot.app)
        seen = set(first)
        await pilot.press("1", "down", "enter")  # the size's list, open
        await pilot.pause(0.3)
        seen |= set(screen_text(pilot.app))
        drawn = {c for c in seen if not c.isascii()}
        if ascii:
            assert not drawn, f"non-ASCII on screen: {sorted(drawn)}"
            text = " ".join(first.split())
            # the arrow reads as one: `quick-demo v`, not `quick-demo ?`
            assert re.search(r"Workload\s*quick-demo\s*v\s*\|", text), text[:400]
            assert not re.search(r"quick-demo\s*\?", text), text[:400]
        else:
            assert "▼" in drawn or "▲" in drawn  # the selects' arrows were looked at
            assert not {c for c in drawn if ord(c) not in TRANSLATE}, sorted(drawn)
