"""The recorded durability run (tests/fixtures/durability.json) as raw JSON and as a RunRecord.

Tests compute their expected numbers from `raw()` themselves, independently of the code
under test, and feed `record()` to it.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from explorer.models import RunRecord, ServerInfo, TrialResult
from tests.support.paths import DURABILITY

FIXTURE = DURABILITY


def raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def raw_results() -> list[dict[str, Any]]:
    return [e["result"] for e in raw()["events"] if e["kind"] == "trial-ended"]


def record() -> RunRecord:
    data = raw()
    started = next(e for e in data["events"] if e["kind"] == "run-started")
    return RunRecord(
        id=started["run_id"],
        profile=data["profile"],
        scale=data["scale"],
        server=ServerInfo.model_validate(started["server"]),
        started_at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        status="finished",
        trials=[TrialResult.model_validate(r) for r in raw_results()],
    )
