"""The app's log shows control characters as text (issue 40, promise 5): a server's or the
network's sentence is not a model's name, so nothing escaped it before the log did."""

from __future__ import annotations

from pathlib import Path

from explorer.lab.store.results import ResultStore
from explorer.text import CONTROL
from explorer.tui.app import PgwxApp
from tests.support.app import log_text, wait_for

TITLE = "\x1b]0;PWNED\x07\x1b[2J"
"""Set the terminal's title, clear the screen."""


async def test_the_log_writes_a_failure_with_control_characters_as_text(tmp_path: Path) -> None:
    dsn = f"postgresql://nobody@127.0.0.1:9/x{TITLE}"
    app = PgwxApp(dsn=dsn, store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: "failed" in log_text(lab), 20)
        text = log_text(lab)
        assert "Connectingfailed:" in text
        assert "x\\x1b]0;PWNED\\x07\\x1b[2J" in text, text
        assert CONTROL.search(text) is None, text
