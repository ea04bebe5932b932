"""Ctrl-C in the app says which key quits (issue 20: during a matrix it was ignored silently)."""

from __future__ import annotations

from pathlib import Path

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp

FIXTURE = Path(__file__).parents[1] / "fixtures" / "durability.json"


async def test_ctrl_c_says_press_q(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    said: list[str] = []
    app.notify = lambda message, **_kw: said.append(str(message))  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert any("press q" in m for m in said), said
        assert app.is_running  # and it did not quit
