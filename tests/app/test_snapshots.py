"""SVG snapshots of the lab on a fixed recorded run (tests/fixtures/durability.json).

The stream was recorded once from a real run and made deterministic (see
tests/fixtures/record.py); replayed all at once, nothing here depends on a clock or a
server. Regenerate after an intended change with `pytest tests/app/test_snapshots.py
--snapshot-update`, and look at the SVGs before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.server import installs
from tests.support.app import replay_app, settle
from tests.support.paths import FIXTURES

MID_RUN = 165
"""Events up to the second repeat's COPY of the baseline, 95% done: every pane has data."""


VERDICTS = FIXTURES / "quick-demo.json"
"""quick-demo recorded with a warm-up and five measured rounds (tests/fixtures/record.py
--profile quick-demo --scale 0.3 --repeats 5 --variants ''): enough trials for intervals."""


@pytest.fixture(autouse=True)
def no_lz4_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same images whatever PostgreSQL this machine has (the lz4 reason names one)."""
    monkeypatch.setattr(installs, "lz4_elsewhere", lambda: None)


def test_main_mid_run_120x36(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(replay_app(tmp_path, MID_RUN), terminal_size=(120, 36), run_before=settle)


def test_main_mid_run_80x24(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(replay_app(tmp_path, MID_RUN), terminal_size=(80, 24), run_before=settle)


def test_activity_io_mid_run_80x24(snap_compare, tmp_path: Path) -> None:
    async def io_then_settle(pilot) -> None:  # type: ignore[no-untyped-def]
        # The key inside run_before, then settle: the caption's second measure after the
        # switch can land after the snapshot's own short pause (a chart one row taller).
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)

    assert snap_compare(
        replay_app(tmp_path, MID_RUN), terminal_size=(80, 24), run_before=io_then_settle
    )


def test_main_after_matrix_120x36(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(replay_app(tmp_path), terminal_size=(120, 36), run_before=settle)


def test_summary_card_after_matrix_80x24(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(replay_app(tmp_path), terminal_size=(80, 24), run_before=settle)


def test_waits_after_matrix_120x36(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(
        replay_app(tmp_path), terminal_size=(120, 36), run_before=settle, press=["w"]
    )


def test_help_120x36(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(
        replay_app(tmp_path), terminal_size=(120, 36), run_before=settle, press=["question_mark"]
    )


def test_results_row_mechanism_80x24(snap_compare, tmp_path: Path) -> None:
    """The results pane with a row selected: its mechanism under the table."""
    assert snap_compare(
        replay_app(tmp_path),
        terminal_size=(80, 24),
        run_before=settle,
        press=["4", "down", "down", "down", "down"],
    )


def test_verdicts_after_matrix_120x36(snap_compare, tmp_path: Path) -> None:
    app = replay_app(tmp_path, fixture=VERDICTS)
    assert snap_compare(app, terminal_size=(120, 36), run_before=settle)


def test_verdicts_after_matrix_80x24(snap_compare, tmp_path: Path) -> None:
    app = replay_app(tmp_path, fixture=VERDICTS)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)
