"""The test session cannot reach the user's real pgwx files (issue 20, support/isolation.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from explorer.lab.run.scratch import scratch_dir
from explorer.paths import (
    cluster_data_dir,
    data_home,
    local_results_path,
    log_path,
    state_dir,
    user_profiles_dir,
)
from tests.support import isolation


def test_every_default_location_is_the_sessions_scratch() -> None:
    for where in (
        cluster_data_dir(),
        cluster_data_dir(15),
        local_results_path(),
        data_home(),
        state_dir(),
        log_path(),
        user_profiles_dir(),
        Path(tempfile.gettempdir()),
    ):
        assert where.is_relative_to(isolation.SCRATCH), where
    with scratch_dir() as work:
        assert work.is_relative_to(isolation.SCRATCH)


def test_a_file_made_in_a_real_location_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real-data"
    real.mkdir()
    (real / "results.sqlite").write_text("")
    monkeypatch.setattr(isolation, "REAL", {"data": real})
    monkeypatch.setattr(isolation, "BEFORE", {"data": isolation._look(real)})
    assert isolation.created_in_real_locations() == []
    (real / "results.sqlite-wal").write_text("")  # someone else using the store
    assert isolation.created_in_real_locations() == []
    (real / "pg18").mkdir()
    assert isolation.created_in_real_locations() == [f"{real} (data): pg18"]
