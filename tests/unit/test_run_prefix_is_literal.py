"""A run prefix is matched as typed: `%` and `_` are characters, not wildcards (issue 19).

A recording's run id of `%` matched every run in `pgwx report`, `compare` and `replay`; the
store now compares the prefix itself, so such a name can only ever name itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore, StoreError
from tests.support.stored import bundled_record as _record


def test_wildcards_in_a_prefix_match_only_themselves(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    store.begin_run(_record("20261122-030405-ab12cd", minutes_ago=3))
    for ref in ("%", "_", "2026112_", "%ab12cd"):
        with pytest.raises(StoreError, match="No run matches"):
            store.resolve(ref)
    assert store.resolve("20261122") == "20261122-030405-ab12cd"
    store.close()
