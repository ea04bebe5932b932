"""Serverless checks of the engine's shared helpers: availability, the workload factory, SQL."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.scope import rows_affected
from explorer.lab.workloads import build_workload
from explorer.lab.workloads.base import WorkloadError
from explorer.models import Capabilities, Knobs, Profile, TableKind, Toast
from tests.support.paths import DURABILITY

FIXTURE = DURABILITY


def recorded() -> tuple[Profile, Capabilities]:
    """The recorded run's profile and server (PostgreSQL 18 pgwx owns, built without lz4)."""
    data = json.loads(FIXTURE.read_text())
    started = next(e for e in data["events"] if e["kind"] == "run-started")
    caps = Capabilities.model_validate(started["server"]["capabilities"])
    return Profile.model_validate(data["profile"]), caps


def test_one_rule_covers_the_server_and_the_workload() -> None:
    profile, caps = recorded()
    # file-extension loads through other sessions (and follows table_kind, not toast).
    other = profile.model_copy(update={"workload": "file-extension", "params": {}})
    loads_elsewhere = build_workload(other, 1)
    temp = Knobs(table_kind=TableKind.TEMPORARY)
    assert unavailable_reason(temp, caps, allow_risky=False) is None
    why = unavailable_reason(temp, caps, allow_risky=False, workload=loads_elsewhere)
    assert why is not None and "TEMPORARY" in why
    # ...but a knob the workload does not follow comes first: nothing else would matter.
    lz4 = Knobs(toast=Toast.LZ4)
    why = unavailable_reason(lz4, caps, allow_risky=False, workload=loads_elsewhere)
    assert why is not None and "changes nothing" in why


def test_risky_settings_need_consent_only_on_a_server_pgwx_does_not_own() -> None:
    _, caps = recorded()
    off = Knobs(fsync=False)
    assert unavailable_reason(off, caps, allow_risky=False) is None  # pgwx owns it
    theirs = caps.model_copy(update={"owned": False})
    why = unavailable_reason(off, theirs, allow_risky=False)
    assert why is not None and "--allow-risky" in why
    assert unavailable_reason(off, theirs, allow_risky=True) is None


def test_build_workload_validates_and_scales() -> None:
    profile, _ = recorded()
    workload = build_workload(profile, 0.3)
    assert workload.kind == "bulk-write"
    assert workload.params.rows == 300_000  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        build_workload(profile.model_copy(update={"params": {"rows": 0}}))
    with pytest.raises(KeyError):
        build_workload(profile.model_copy(update={"workload": "nonesuch"}))


def test_a_workload_without_its_prepared_data_says_so() -> None:
    profile, _ = recorded()
    with pytest.raises(WorkloadError, match="prepare did not run"):
        build_workload(profile).prepared()


@pytest.mark.parametrize(
    ("status", "rows"), [("INSERT 0 42", 42), ("UPDATE 7", 7), ("COPY 300000", 300_000)]
)
def test_rows_affected_reads_the_command_status(status: str, rows: int) -> None:
    assert rows_affected(status) == rows
