"""`pgwx --ascii` reaches the app as an argument, however the app is opened; no environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from explorer import cli


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["--ascii"], True),
        ([], None),
        (["--ascii", "replay", "quick-demo"], True),
        (["replay", "quick-demo"], None),
    ],
    ids=["app-ascii", "app-locale", "replay-ascii", "replay-locale"],
)
def test_ascii_flag_reaches_the_app_as_an_argument(
    argv: list[str], wanted: bool | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import explorer.tui.app

    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.delenv("PGWX_ASCII", raising=False)
    opened: list[dict[str, object]] = []

    def fake_run_app(**kwargs: object) -> int:
        opened.append(kwargs)
        return 0

    monkeypatch.setattr(explorer.tui.app, "run_app", fake_run_app)
    assert cli.main(argv) == 0
    assert [o["ascii"] for o in opened] == [wanted]
    assert "PGWX_ASCII" not in os.environ, "nothing travels through the environment"
