"""The app's run state for a run on several servers (`RunView.apply_on`), without a server.

Two servers' runs, made up with a known effect, are fed as their runners emit them, taking
turns: the view names each variant with its server, counts the trials of both, judges each
variant against its own server's baseline, ends when both have ended, and adds the verdicts
between the servers in the command line's words.
"""

from __future__ import annotations

import random
import statistics

from explorer.analysis import servers
from explorer.analysis.calibration import synthetic_caps, synthetic_record, synthetic_trial
from explorer.lab.view.runstate import RunView
from explorer.models import (
    Event,
    Notice,
    Profile,
    RunEnded,
    RunRecord,
    RunStarted,
    ServerAxis,
    TrialEnded,
    TrialStarted,
    Variant,
)

PROFILE = Profile(
    name="axis",
    title="axis",
    workload="table-kind",
    repeats=6,
    warmup=0,
    variants=[Variant(name="logged"), Variant(name="unlogged")],
)
RUNS = ["20261126-120000-aaaaa0", "20261126-120001-aaaaa1"]


def server_run(major: int, position: int, unlogged: float, seed: int) -> RunRecord:
    """Six rounds of both variants; unlogged `unlogged` times logged's load."""
    rng = random.Random(seed)
    trials = [
        synthetic_trial(name, r, {"load": base * rng.uniform(0.99, 1.01)})
        for r in range(1, 7)
        for name, base in (("logged", 1.0), ("unlogged", unlogged))
    ]
    record = synthetic_record(PROFILE, trials)
    caps = synthetic_caps(major * 10000 + 6)
    return record.model_copy(
        update={
            "id": RUNS[position],
            "status": "finished",
            "server": record.server.model_copy(update={"capabilities": caps}),
            "axis": ServerAxis(
                group=RUNS[0], label=str(major), position=position, runs=RUNS, labels=["15", "18"]
            ),
        }
    )


def feed(view: RunView, runs: dict[str, RunRecord], end: dict[str, str]) -> list[Event]:
    """Each server's events, the servers taking turns trial by trial; what the view told."""
    told: list[Event] = []
    at = 0.0
    for label, run in runs.items():
        started = RunStarted(
            at=at, run_id=run.id, profile="axis", server=run.server, total_trials=12
        )
        told.append(view.apply_on(label, started))
    for n in range(12):
        for label, run in runs.items():
            trial = run.trials[n]
            at += 1
            start = TrialStarted(
                at=at, variant=trial.variant, repeat=trial.repeat, index=n + 1, total=12
            )
            told.append(view.apply_on(label, start))
            told.append(view.apply_on(label, TrialEnded(at=at + 0.5, result=trial)))
    told.append(view.apply_on("15", Notice(at=at, message="restored wal_level")))
    for label, run in runs.items():
        told.append(view.apply_on(label, RunEnded(at=at, run_id=run.id, status=end[label])))
        if label == "15":
            assert view.running  # 18 has not ended yet
    return told


def fresh() -> tuple[RunView, dict[str, RunRecord]]:
    view = RunView(profile=PROFILE)
    view.several(["15", "18"])
    return view, {"15": server_run(15, 0, 0.5, seed=1), "18": server_run(18, 1, 0.4, seed=2)}


def test_each_variant_is_shown_on_each_server_against_its_own_baseline() -> None:
    view, runs = fresh()
    told = feed(view, runs, {"15": "finished", "18": "finished"})
    assert view.record is not None
    names = [v.name for v in view.record.profile.variants]
    assert names == ["logged @ 15", "logged @ 18", "unlogged @ 15", "unlogged @ 18"]
    assert view.total_trials == 24 and view.trial_index == 24
    assert view.status == "finished"
    started = [e.variant for e in told if isinstance(e, TrialStarted)]
    assert started[:2] == ["logged @ 15", "logged @ 18"]  # the servers took turns
    # The log's counter is the header's: both servers' trials, not each server's own.
    counted = [(e.index, e.total) for e in told if isinstance(e, TrialStarted)]
    assert counted[:3] == [(1, 24), (2, 24), (3, 24)] and counted[-1] == (24, 24)
    assert "on 15: restored wal_level" in [e.message for e in told if isinstance(e, Notice)]
    rows = {(r.variant, r.phase): r for r in view.summary}
    assert rows[("logged @ 15", "load")].baseline and rows[("logged @ 18", "load")].baseline
    # Against its own server's logged (0.4), not against 15's (which would also be 0.4 × 1):
    # 18's unlogged is judged on 18, 15's on 15.
    on18 = rows[("unlogged @ 18", "load")].verdict
    on15 = rows[("unlogged @ 15", "load")].verdict
    assert on18 is not None and on15 is not None
    assert abs(on18.ratio - 0.4) < 0.02 and abs(on15.ratio - 0.5) < 0.02
    # The stored runs keep their own names: the view's shares are theirs.
    assert [t.variant for t in view.shares["18"].trials][:2] == ["logged", "unlogged"]


def test_the_verdicts_between_servers_join_the_table_in_the_command_lines_words() -> None:
    view, runs = fresh()
    feed(view, runs, {"15": "finished", "18": "finished"})
    view.judge_servers([runs["15"], runs["18"]])
    judged = servers.judge_servers([runs["15"], runs["18"]])
    pair = {(r.variant, r.phase): r for r in view.server_rows}
    expected = next(r for r in judged.rows if (r.variant, r.phase) == ("unlogged", "load"))
    row = pair[("unlogged on 18 vs 15", "load")]
    assert row.verdict_label() == expected.verdict.label() and "faster" in row.verdict_label()
    # Its figures are 18's trials, and it says so (there is no mechanism of its own to show).
    assert row.median == statistics.median(expected.seconds) and row.mechanism is None
    assert row.note == "18's trials, judged against 15's"
    assert view.summary[-len(view.server_rows) :] == view.server_rows
    assert view.between == [r.sentence() for r in judged.rows if r.phase == "total"] or [
        r.sentence() for r in judged.rows
    ]
    assert any(s.startswith("unlogged load on 18 vs 15: 0.8") for s in view.between), view.between


def test_one_server_cancelled_makes_the_run_cancelled_once_both_have_ended() -> None:
    view, runs = fresh()
    told = feed(view, runs, {"15": "finished", "18": "cancelled"})
    assert view.status == "cancelled"
    ended = [e for e in told if isinstance(e, RunEnded)]
    assert len(ended) == 1 and ended[0].status == "cancelled"  # the screen hears one end


def test_a_run_on_one_server_after_one_on_several_starts_a_table_of_its_own() -> None:
    view, runs = fresh()
    feed(view, runs, {"15": "finished", "18": "finished"})
    view.several([])
    view.accumulate = True
    run = runs["15"]
    view.apply(RunStarted(at=0, run_id="x", profile="axis", server=run.server, total_trials=1))
    assert view.record is not None and view.record.trials == []
    assert not view.servers and not view.server_rows
