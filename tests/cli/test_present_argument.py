"""`pgwx --present` and `pgwx replay RUN --present` reach the app as an argument; without
it the app decides by the terminal's size (None)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["--present"], True),
        ([], None),
        (["replay", "quick-demo", "--present"], True),
        (["--present", "replay", "quick-demo"], True),
        (["replay", "quick-demo"], None),
    ],
    ids=["app", "app-by-size", "replay-after", "replay-before", "replay-by-size"],
)
def test_present_flag_reaches_the_app(
    argv: list[str], wanted: bool | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import explorer.tui.app

    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    opened: list[dict[str, object]] = []

    def fake_run_app(**kwargs: object) -> int:
        opened.append(kwargs)
        return 0

    monkeypatch.setattr(explorer.tui.app, "run_app", fake_run_app)
    assert cli.main(argv) == 0
    assert [o["present"] for o in opened] == [wanted]
