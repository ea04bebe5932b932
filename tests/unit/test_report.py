"""`summarize` and `TrialStats` on the recorded run (tests/fixtures/durability.json), no server.

Every expected number is computed here from the raw JSON, independently of report.py.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
from collections import Counter

import pytest

from explorer.analysis.report import summarize, to_csv, to_markdown
from explorer.models import BLOCK_SIZE, RunRecord, ServerInfo, TrialResult, TrialStats
from tests.support.paths import DURABILITY
from tests.support.recorded import raw, raw_results, record

FIXTURE = DURABILITY


def phase_seconds(variant: str, phase: str) -> list[float]:
    out = []
    for r in raw_results():
        if r["variant"] == variant and r["status"] == "ok":
            found = [p["seconds"] for p in r["phases"] if p["name"] == phase]
            if phase == "total":
                found = [sum(p["seconds"] for p in r["phases"])]
            out += found
    return out


VARIANTS = ["defaults", "sync-commit-off", "fsync-fpw-off", "unlogged", "minimal-same-txn"]


# --------------------------------------------------------------------------- TrialStats


def test_fixture_has_what_these_tests_need() -> None:
    results = raw_results()
    assert {r["variant"] for r in results} == set(VARIANTS)
    assert all(r["status"] == "ok" and r["stats"] for r in results)
    assert raw()["profile"]["baseline"] == "defaults"


def test_trial_stats_load_the_stored_dict_shape() -> None:
    for stored in raw_results():
        trial = TrialResult.model_validate(stored)
        s = trial.stats
        assert isinstance(s, TrialStats)
        old = stored["stats"]
        assert s.wal_bytes == old["wal_bytes"]
        assert s.wal_fpi == old["wal_fpi"]
        assert s.top_wait == old["top_wait"]
        assert s.io == old["io"] and s.io_by_backend == old["io_by_backend"]
        assert s.waits == old["waits"]
        assert s.extended_pages == old["io"]["extend_bytes"] // BLOCK_SIZE
        assert s.fsyncs == old["io"]["fsyncs"]
        # Counters stay integers, so a re-saved run is the same JSON (plus the warm-up flag
        # that runs stored before it existed lack: their trials all counted).
        assert isinstance(s.io["reads"], int)
        assert json.loads(trial.model_dump_json()) == {**stored, "warmup": False}


def test_a_trial_without_sampler_summary_keeps_its_empty_object() -> None:
    stored = {**raw_results()[0], "status": "skipped", "stats": {}, "phases": []}
    trial = TrialResult.model_validate(stored)
    assert trial.stats is None
    assert trial.model_dump(mode="json")["stats"] == {}


def test_unknown_stats_keys_are_tolerated_and_kept() -> None:
    stored = raw_results()[0]
    newer = {**stored, "stats": {**stored["stats"], "from_a_newer_pgwx": 7}}
    trial = TrialResult.model_validate(newer)
    assert trial.model_dump(mode="json")["stats"]["from_a_newer_pgwx"] == 7


def test_extended_pages_fall_back_to_extend_operations_before_pg18() -> None:
    assert TrialStats(io={"extends": 12, "fsyncs": 3}).extended_pages == 12
    assert TrialStats(io={"extends": 12, "extend_bytes": 5 * BLOCK_SIZE}).extended_pages == 5
    assert TrialStats().extended_pages is None and TrialStats().fsyncs is None


# --------------------------------------------------------------------------- summarize


def test_summarize_medians_per_variant_and_phase() -> None:
    rows = summarize(record())
    assert [r.variant for r in rows if r.phase == "total"] == VARIANTS
    for row in rows:
        values = phase_seconds(row.variant, row.phase)
        assert row.n == len(values) == 2  # two repeats each
        assert row.min == min(values)
        assert row.max == max(values)
        assert row.median == pytest.approx(statistics.median(values))
    assert {r.phase for r in rows} == {"copy", "update", "total"}


def test_summarize_verdicts_against_the_baseline() -> None:
    rows = summarize(record())
    for row in rows:
        mine = phase_seconds(row.variant, row.phase)
        base = phase_seconds("defaults", row.phase)
        # The Hodges–Lehmann ratio: exp of the median of every pairwise log ratio.
        pairwise = [math.log(m / b) for m in mine for b in base]
        assert row.ratio == pytest.approx(math.exp(statistics.median(pairwise)))
        if row.variant == "defaults":
            assert row.baseline and row.verdict is None and row.verdict_label() == "baseline"
        else:
            # Two trials a side: a ratio exists, but no finding is dressed up from it.
            assert row.verdict is not None and row.verdict.n_candidate == 2
            assert row.verdict_label() == "undecided, too few runs (n=2)"


def test_summarize_mechanism_columns_per_phase_and_total() -> None:
    rows = {(r.variant, r.phase): r for r in summarize(record())}
    for variant in VARIANTS:
        mine = [r for r in raw_results() if r["variant"] == variant]
        for name in ("copy", "update"):
            got = [next(p for p in r["phases"] if p["name"] == name) for r in mine]
            m = rows[(variant, name)].mechanism
            assert m is not None
            # WAL read at the phase's exact edges; writers from the sampler's readings
            assert m.values["wal_bytes"] == statistics.median(
                p["mechanism"]["wal_bytes"] for p in got
            )
            assert m.values["extended_workload"] == statistics.median(
                p["mechanism"]["writers"]["workload"]["extended"] for p in got
            )
            assert m.values["fsyncs"] == statistics.median(
                sum(w["fsyncs"] for w in p["mechanism"]["writers"].values()) for p in got
            )
            pooled = Counter[str]()
            for p in got:
                pooled.update(p["mechanism"]["waits"])
            assert m.waits == dict(pooled.most_common())
            assert m.wait_samples == sum(pooled.values())
        total = rows[(variant, "total")].mechanism
        assert total is not None
        per_trial = [sum(p["mechanism"]["wal_fpi"] for p in r["phases"]) for r in mine]
        assert total.values["wal_fpi"] == statistics.median(per_trial)
        assert rows[(variant, "copy")].rows == 300_000


def old_record() -> RunRecord:
    """A run stored before pgwx measured each phase (no mechanism, no environment)."""
    data = json.loads((FIXTURE.parent / "durability-v1-trials.json").read_text())
    started = next(e for e in data["events"] if e["kind"] == "run-started")
    results = [e["result"] for e in data["events"] if e["kind"] == "trial-ended"]
    return RunRecord(
        id=started["run_id"],
        profile=data["profile"],
        server=ServerInfo.model_validate(started["server"]),
        started_at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        status="finished",
        trials=[TrialResult.model_validate(r) for r in results],
    )


def test_old_runs_load_and_show_what_they_measured() -> None:
    rec = old_record()
    assert rec.environment is None and all(
        p.mechanism is None for t in rec.trials for p in t.phases
    )
    rows = {(r.variant, r.phase): r for r in summarize(rec)}
    copy = rows[("defaults", "copy")].mechanism
    assert copy is not None
    wal = [
        next(p for p in t.phases if p.name == "copy").detail["wal_bytes"]
        for t in rec.trials
        if t.variant == "defaults"
    ]
    assert copy.values["wal_bytes"] == statistics.median(wal)
    # never measured per phase: unknown, not 0
    assert copy.values["extended"] is None and copy.values["wal_fpi"] is None
    md = to_markdown(rec)
    assert "Environment: not recorded" in md
    # a stored run re-saves byte for byte: no new keys appear in its JSON
    for t in rec.trials:
        assert "mechanism" not in t.model_dump_json()


def test_csv_has_one_line_per_summary_row() -> None:
    rec = record()
    lines = to_csv(rec).strip().splitlines()
    assert len(lines) == 1 + len(summarize(rec))


def test_csv_floats_keep_seven_significant_digits_and_stay_numbers() -> None:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(to_csv(record()))))
    floats = [row[k] for row in rows for k in ("min", "median", "max", "ratio") if row[k]]
    assert floats, "the fixture has timings"
    for cell in floats:
        digits = cell.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
        assert len(digits) <= 7, cell
        float(cell)  # a number, not a text cell with a formula guard in front


def test_a_table_of_the_baseline_alone_does_not_claim_a_comparison() -> None:
    # `pgwx run index-bloat --variant logged` printed "one comparison, no correction needed"
    # under a table with no comparison in it.
    full = record()
    alone = full.model_copy(update={"trials": [t for t in full.trials if t.variant == "defaults"]})
    text = to_markdown(alone)
    assert "one comparison" not in text
    assert "only the baseline defaults ran, so this table compares nothing" in text
    assert "Holm-corrected across the table's" in to_markdown(full)
