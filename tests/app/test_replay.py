"""Replay a presenter can drive, and recordings one can carry (issue 11).

Pilot tests drive the app with the keys a presenter uses and check the panes' state against
the state rebuilt, independently, by folding the same events into a fresh `RunView`.
Export/import run a real matrix on the bundled PostgreSQL 18 first.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from explorer import cli
from explorer.lab.store.recording import FORMAT, read_recording
from explorer.lab.store.replay import Player, ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.lab.view.runstate import RunView
from explorer.models import (
    PhaseEnded,
    PhaseStarted,
    RunEnded,
    TrialEnded,
    TrialStarted,
    Variant,
)
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.screens.lab import LabScreen
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.results_table import ResultsTable
from tests.support.paths import DURABILITY
from tests.support.runs import RunProfile, small_profile

FIXTURE = DURABILITY


async def wait_for(pilot: Pilot[int], check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for a condition, generously (the machine is shared)."""
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await pilot.pause(0.05)
    assert check()


def folded(source: ReplaySource, count: int) -> RunView:
    """What a live run showed after `count` events: the events folded one by one."""
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events[:count]:
        view.apply(event)
    return view


def same_state(a: RunView, b: RunView) -> None:
    assert (a.status, a.variant, a.repeat, a.phase, a.trial_index) == (
        b.status,
        b.variant,
        b.repeat,
        b.phase,
        b.trial_index,
    )
    assert a.now == b.now and a.last_phase == b.last_phase
    assert a.trial_phases == b.trial_phases
    assert list(a.phase_marks) == list(b.phase_marks)
    assert a.summary == b.summary
    assert a.activity.samples == b.activity.samples
    assert list(a.activity.wal) == list(b.activity.wal)


def table_rows(lab: LabScreen) -> list[tuple[str, ...]]:
    table = lab.query_one(ResultsTable)
    return [tuple(str(c) for c in table.get_row_at(n)) for n in range(table.row_count)]


def highlighted(lab: LabScreen) -> list[str]:
    """What the duration pane shows highlighted (reverse) about the trial in flight."""
    text = lab.query_one(DurationPane)._now_text(60)
    return [text.plain[s.start : s.end].strip() for s in text.spans if "reverse" in str(s.style)]


# --------------------------------------------------------------------------- the player


def test_a_jump_rebuilds_exactly_what_playing_showed() -> None:
    source = ReplaySource.from_file(FIXTURE)
    view = RunView(profile=source.profile, scale=source.scale)
    player = Player(source, view)
    assert player.boundaries, "the fixture has phases"
    while not player.done:
        player.step()
    for target in (*player.boundaries[:3], 1, len(source.events) // 2, len(source.events)):
        player.seek(target)
        same_state(view, folded(source, target))
    # A jump back and forward again ends where plain playing ends.
    player.seek(3)
    while not player.done:
        player.step()
    same_state(view, folded(source, len(source.events)))


def test_jumps_from_checkpoints_are_exact() -> None:
    source = ReplaySource.from_file(FIXTURE)
    view = RunView(profile=source.profile, scale=source.scale)
    player = Player(source, view, checkpoint_every=16)
    end = len(source.events)
    for target in (end, 40, end - 3, 17, 16, 100, 0, end):
        player.seek(target)
        same_state(view, folded(source, target))
        while player.position < min(target + 20, end):
            player.step()  # playing on from a restored checkpoint never changes the checkpoint
        same_state(view, folded(source, player.position))
    assert len(player._checkpoints) == end // 16


def test_phase_boundaries_step_forward_and_back() -> None:
    source = ReplaySource.from_file(FIXTURE)
    player = Player(source, RunView(profile=source.profile))
    first, second = player.boundaries[:2]
    assert player.next_boundary() == first + 1
    player.seek(first + 1)
    assert isinstance(source.events[first], PhaseStarted)
    assert player.view.phase == source.events[first].phase  # type: ignore[union-attr]
    assert player.next_boundary() == second + 1
    player.seek(second + 1)
    assert player.previous_boundary() == first + 1
    player.seek(player.previous_boundary())
    assert player.previous_boundary() == 0
    player.seek(len(source.events))
    assert player.next_boundary() is None


def test_speeds_step_through_the_presenters_list() -> None:
    player = Player(ReplaySource([], speed=1.0), RunView())
    assert [player.faster(1) for _ in range(5)] == [2, 4, 8, 16, 16]
    assert [player.faster(-1) for _ in range(7)] == [8, 4, 2, 1, 0.5, 0.25, 0.25]


def test_pace_is_measured_from_when_playing_started() -> None:
    source = ReplaySource.from_file(FIXTURE, speed=2.0)
    player = Player(source, RunView(profile=source.profile))
    player.step()
    player.start(100.0)
    gap = source.events[1].at - source.events[0].at
    assert player.wait(100.0) == pytest.approx(gap / 2)
    # Time spent drawing is taken off the wait, not added to the replay.
    assert player.wait(100.0 + gap / 4) == pytest.approx(gap / 4)
    assert player.wait(100.0 + gap) == 0.0


def test_a_new_trial_does_not_show_the_previous_trials_last_phase() -> None:
    source = ReplaySource.from_file(FIXTURE)
    starts = [i for i, e in enumerate(source.events) if isinstance(e, TrialStarted)]
    assert len(starts) > 1
    view = folded(source, starts[1] + 1)  # the second trial is setting up
    assert view.last_phase is None and view.trial_phases == []
    assert "took" not in DurationPane(view)._now_text(60).plain


# --------------------------------------------------------------------------- the app


def replay_app(tmp_path: Path, speed: float = 1.0) -> PgwxApp:
    source = ReplaySource.from_file(FIXTURE, speed=speed)
    return PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"))


async def test_space_pauses_and_resumes(tmp_path: Path) -> None:
    app = replay_app(tmp_path, speed=1.0)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        player = lab.controller.player
        assert player is not None
        await wait_for(pilot, lambda: player.position > 2)
        await pilot.press("space")
        assert player.paused
        held = player.position
        await pilot.pause(0.5)  # recorded samples come every 0.25 s: none may land now
        assert player.position == held
        same_state(lab.view, folded(app.config.replay, held))  # type: ignore[arg-type]
        assert "REPLAY 1× paused · " in lab.query_one("#header").label  # type: ignore[attr-defined]
        await pilot.press("space")
        assert not player.paused
        await wait_for(pilot, lambda: player.position > held)


async def test_speed_keys_change_the_pace_and_the_header(tmp_path: Path) -> None:
    app = replay_app(tmp_path, speed=1.0)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        header = lab.query_one("#header")
        assert header.label.startswith("REPLAY 1× · on PostgreSQL 18.6 (bundled)")  # type: ignore[attr-defined]
        await pilot.press("greater_than_sign", "greater_than_sign")
        assert lab.controller.player.speed == 4  # type: ignore[union-attr]
        assert header.label.startswith("REPLAY 4×")  # type: ignore[attr-defined]
        await pilot.press(*["less_than_sign"] * 6)
        assert lab.controller.player.speed == 0.25  # type: ignore[union-attr]
        assert header.label.startswith("REPLAY 0.25×")  # type: ignore[attr-defined]


async def test_phase_keys_jump_and_every_pane_follows(tmp_path: Path) -> None:
    app = replay_app(tmp_path, speed=1.0)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        player = lab.controller.player
        assert player is not None
        await pilot.press("space")  # paused, so the state stays where the jump put it
        # Back to the start: the replay plays at 1x until the pause lands, and a slow start
        # (a loaded machine) can carry it past the first phase boundary before that.
        await pilot.press("g")
        for _ in range(3):
            await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        third = player.boundaries[2] + 1
        assert player.position == third
        same_state(lab.view, folded(app.config.replay, third))  # type: ignore[arg-type]
        phase = lab.view.phase
        assert phase is not None and highlighted(lab) == [phase.upper()]
        assert (
            [m for m, _ in lab.view.phase_marks]
            == [
                app.config.replay.events[b].at  # type: ignore[union-attr]
                for b in player.boundaries[:3]
            ]
        )
        await pilot.press("left_square_bracket")
        await pilot.pause(0.1)
        assert player.position == player.boundaries[1] + 1
        same_state(lab.view, folded(app.config.replay, player.position))  # type: ignore[arg-type]
        # The chart was redrawn from the rebuilt series, with the phase rules.
        chart = lab.query_one(ActivityPane).chart
        await wait_for(pilot, lambda: chart.drawn_spec is not None)
        assert list(chart.drawn_spec.marks) == list(lab.view.phase_marks)  # type: ignore[union-attr]


async def test_end_and_start_keys(tmp_path: Path) -> None:
    app = replay_app(tmp_path, speed=1.0)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await pilot.press("G")
        await wait_for(pilot, lambda: lab.view.status == "finished")
        await pilot.pause(0.2)
        everything = folded(app.config.replay, len(app.config.replay.events))  # type: ignore[union-attr, arg-type]
        same_state(lab.view, everything)
        assert len(table_rows(lab)) == len(everything.summary) > 0
        assert "end of replay" in "".join(
            s.text
            for s in lab.query_one("#log").lines  # type: ignore[attr-defined]
        )
        await pilot.press("g")
        await pilot.pause(0.1)
        assert lab.view.running and lab.view.summary == []
        assert table_rows(lab) == []


async def test_footer_shows_replay_keys_not_run_keys(tmp_path: Path) -> None:
    app = replay_app(tmp_path, speed=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        lab = app.lab
        for action in ("run", "matrix", "cancel"):
            assert lab.check_action(action, ()) is False
            assert action not in shown
        for action in ("replay_pause", "replay_speed(1)", "replay_phase(1)", "replay_jump('end')"):
            assert action in shown
        await pilot.press("r")  # hidden and inert: nothing starts
        assert not lab.controller.runner


# --------------------------------------------------------------------------- recordings


@pytest.fixture
async def recorded(
    pg18: Target,
    run_profile: RunProfile,
    store: ResultStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, Path]:
    """A real two-variant run on PG 18, sampled, exported to a .pgwx file."""
    profile = small_profile(
        "table-kind",
        [Variant(name="logged"), Variant(name="unlogged", knobs={"table_kind": "unlogged"})],
        rows=3000,
    )
    record, _ = await run_profile(pg18, profile, sampler=True)
    out = tmp_path / "talk.pgwx"
    store.close()
    monkeypatch.setenv("PGWX_RESULTS", str(store.path))
    assert cli.main(["export", record.id, "--out", str(out)]) == 0
    return record.id, out


def test_export_is_private_versioned_and_complete(
    recorded: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run_id, out = recorded
    assert out.stat().st_mode & 0o777 == 0o600
    data = json.loads(gzip.decompress(out.read_bytes()))
    assert (data["format"], data["version"]) == (FORMAT, 1)
    store = ResultStore(Path(str(tmp_path / "results.sqlite")))
    stored = list(store.events(run_id))
    store.close()
    assert len(data["events"]) == len(stored)
    assert data["run"]["trials"] and data["run"]["profile"]["variants"]
    assert data["run"]["server"]["capabilities"]["gucs"]
    assert all(e["at"] == round(e["at"], 3) for e in data["events"])


def test_redact_host_masks_socket_paths(
    recorded: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, out = recorded
    rec = read_recording(out)
    socket_dir = rec.run.server.dsn_masked.split("(")[-1].rstrip(")")
    assert socket_dir.startswith("/")
    assert socket_dir in gzip.decompress(out.read_bytes()).decode()
    hidden = tmp_path / "hidden.pgwx"
    assert cli.main(["export", run_id, "--out", str(hidden), "--redact-host"]) == 0
    text = gzip.decompress(hidden.read_bytes()).decode()
    assert socket_dir not in text and "<host>" in text
    # nor the server programs' directory, which names the user's folders (issue 39)
    assert " in /" not in text and "postgres (PostgreSQL)" in text and " in <path>" in text
    assert read_recording(hidden).run.trials  # still a valid recording


async def test_export_then_replay_shows_the_same_results_table(
    recorded: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, out = recorded
    home = ResultStore(tmp_path / "results.sqlite")
    original = PgwxApp(replay=ReplaySource.from_store(home, run_id, speed=0), store=home)
    async with original.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: original.lab.view.status == "finished")
        await pilot.pause(0.2)
        expected = table_rows(original.lab)
    # Another machine: an empty data directory, no server.
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "elsewhere" / "results.sqlite"))
    elsewhere = ResultStore()
    app = PgwxApp(replay=ReplaySource.find(elsewhere, str(out), speed=0), store=elsewhere)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.lab.view.status == "finished")
        await pilot.pause(0.2)
        assert table_rows(app.lab) == expected and expected
    assert elsewhere.list_runs() == []  # replaying never writes a run


def test_export_then_import_reports_identically(
    recorded: tuple[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id, out = recorded
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "results.sqlite"))
    for fmt in ("md", "json"):
        assert cli.main(["report", run_id, "--format", fmt]) == 0
    here = capsys.readouterr().out
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "elsewhere" / "results.sqlite"))
    assert cli.main(["import", str(out)]) == 0
    assert run_id in capsys.readouterr().out
    for fmt in ("md", "json"):
        assert cli.main(["report", run_id, "--format", fmt]) == 0
    assert capsys.readouterr().out == here
    assert cli.main(["import", str(out)]) == 2  # twice: one sentence, nothing doubled
    err = capsys.readouterr().err
    assert "already in" in err and err.count("\n") == 1


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    for command in (["replay", str(path), "--headless"], ["import", str(path)]):
        assert cli.main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("pgwx: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_truncated_foreign_and_future_files_are_refused_in_one_sentence(
    recorded: tuple[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _run_id, out = recorded
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "elsewhere" / "results.sqlite"))
    raw = out.read_bytes()
    truncated = tmp_path / "truncated.pgwx"
    truncated.write_bytes(raw[: len(raw) // 2])
    assert "truncated" in _refused(truncated, capsys)
    foreign = tmp_path / "foreign.pgwx"
    foreign.write_bytes(b"\x89PNG\r\n\x1a\n not a recording")
    assert "is not a pgwx recording" in _refused(foreign, capsys)
    other_gzip = tmp_path / "other.pgwx"
    other_gzip.write_bytes(gzip.compress(b'{"hello": "world"}'))
    assert "is not a pgwx recording" in _refused(other_gzip, capsys)
    data = json.loads(gzip.decompress(raw))
    data["version"] = 2
    future = tmp_path / "future.pgwx"
    future.write_bytes(gzip.compress(json.dumps(data).encode()))
    assert "newer than this pgwx reads" in _refused(future, capsys)


# --------------------------------------------------------------------------- shipped ones


@pytest.mark.parametrize("name", ["quick-demo", "fk-timing-restore"])
async def test_shipped_recordings_replay_to_the_end(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = recordings_dir() / f"{name}.pgwx"
    assert path.stat().st_size <= 300 * 1024
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "empty" / "results.sqlite"))
    store = ResultStore()
    source = ReplaySource.find(store, name, speed=0)  # by name: no stored run matches
    assert isinstance(source.events[-1], RunEnded) and source.events[-1].status == "finished"
    app = PgwxApp(replay=source, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.lab.view.status == "finished", 60)
        await pilot.pause(0.2)
        assert len(table_rows(app.lab)) == len(app.lab.view.summary) > 0
    if name == "fk-timing-restore":
        deferred = [
            e.result for e in source.events if isinstance(e, PhaseEnded) and e.variant == "deferred"
        ]
        assert {p.name for p in deferred} >= {"load", "commit"}


def test_replay_speed_option_reaches_the_app_and_names_find_recordings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "empty" / "results.sqlite"))
    opened: list[ReplaySource] = []

    def run(app: PgwxApp) -> None:
        assert app.config.replay is not None
        opened.append(app.config.replay)

    monkeypatch.setattr(PgwxApp, "run", run)
    assert cli.main(["replay", "quick-demo", "--speed", "4"]) == 0
    assert opened[-1].speed == 4 and opened[-1].profile is not None
    assert opened[-1].profile.name == "quick-demo"
    assert cli.main(["replay", "quick-demo"]) == 0
    assert opened[-1].speed == 1  # the app's default: the recorded pace
    assert cli.main(["replay", "quick-demo", "--headless"]) == 0
    assert "| logged |" in capsys.readouterr().out
    assert cli.main(["replay", "no-such-demo"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert cli.main(["replay", str(tmp_path / "missing.pgwx")]) == 2
    err = capsys.readouterr().err
    assert "No recording file" in err and err.count("\n") == 1


async def test_replay_header_at_the_given_speed(tmp_path: Path) -> None:
    source = ReplaySource.find(ResultStore(tmp_path / "r.sqlite"), "quick-demo", speed=4)
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        label = app.lab.query_one("#header").label  # type: ignore[attr-defined]
        assert source.recorded_at is not None
        when = source.recorded_at.astimezone().strftime("%Y-%m-%d %H:%M")
        assert label == f"REPLAY 4× · recorded {when} on PostgreSQL 18.6 (bundled)"
        assert app.lab.controller.player.speed == 4  # type: ignore[union-attr]


def test_overlapping_phases_keep_their_own_times() -> None:
    """A restore's COMMIT starts before its load is reported: each keeps its own seconds."""
    source = ReplaySource.from_file(recordings_dir() / "fk-timing-restore.pgwx")
    commit = next(
        i
        for i, e in enumerate(source.events)
        if isinstance(e, PhaseStarted) and e.phase == "commit" and e.variant == "deferred"
    )
    view = folded(source, commit + 1)
    assert view.trial_phases == [("load", None), ("commit", None)]
    strip = DurationPane(view)._now_text(60).plain
    assert "load … ›  COMMIT " in strip
    ended = next(
        i for i in range(commit, len(source.events)) if isinstance(source.events[i], TrialEnded)
    )
    view = folded(source, ended)
    names = [name for name, _ in view.trial_phases]
    assert names == ["load", "commit"] and all(s is not None for _, s in view.trial_phases)
