"""`pgwx --pg 15 --pg 18` (or several --dsn) opens the app on every server named (issue 22);
it used to refuse them with one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli


def test_several_servers_open_the_app_on_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import explorer.tui.app

    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    opened: list[dict[str, object]] = []
    monkeypatch.setattr(explorer.tui.app, "run_app", lambda **kw: opened.append(kw) or 0)
    assert cli.main(["--pg", "15", "--pg", "18"]) == 0
    assert opened[0]["servers"] == [(None, 15), (None, 18)] and opened[0]["bindir"] is None
    assert cli.main(["--dsn", "host=a", "--dsn", "host=b"]) == 0
    assert opened[1]["servers"] == [("host=a", None), ("host=b", None)]
    assert cli.main([]) == 0
    assert opened[2]["servers"] is None  # one server: as before
