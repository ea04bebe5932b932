"""Regenerate screenshots/ from the fixed recorded run: `python scripts/screenshots.py`.

Every image is the app saving itself (no server needed): the recorded durability run in
tests/fixtures/durability.json is replayed all at once, stopped mid-run or at its end; the
quick-demo fixture and the shipped fk-timing-restore recording give the verdicts, the
presenter layout's large type and a replay after a jump; a real recorded max_wal_size
sweep gives the sweep's curve (`v`).
The SVGs are made byte-stable (Rich's random ids replaced) so an unchanged screen makes an
unchanged file. Look at them as PNGs with `rsvg-convert -o /tmp/x.png screenshots/x.svg`.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.lab.store.replay import ReplaySource, recordings_dir  # noqa: E402
from explorer.lab.store.results import ResultStore  # noqa: E402
from explorer.tui.app import PgwxApp  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "durability.json"
VERDICTS = ROOT / "tests" / "fixtures" / "quick-demo.json"
"""quick-demo with a warm-up and five measured rounds: enough trials for intervals."""
OUT = ROOT / "screenshots"
MID_RUN = 165
"""Events up to the second repeat's COPY of the baseline, 95% done."""

SHOTS: list[tuple[str, tuple[int, int], int | None, tuple[str, ...]]] = [
    ("main-120x36", (120, 36), MID_RUN, ()),
    ("main-80x24", (80, 24), MID_RUN, ()),
    ("activity-io-80x24", (80, 24), MID_RUN, ("i",)),
    ("results-120x36", (120, 36), None, ("p",)),
    ("summary-card-80x24", (80, 24), None, ()),
    ("waits-120x36", (120, 36), None, ("w",)),
    ("help-120x36", (120, 36), None, ("question_mark",)),
    ("mechanism-80x24", (80, 24), None, ("4", "down", "down", "down", "down")),
]
"""(file name, terminal size, events to replay (None: all), keys to press): the main
screen mid-run (wide and 80x24), its pg_stat_io view, the results after the matrix (COPY
phase compared), the end-of-matrix summary card at 80x24, the wait events, the help, and the
results pane at 80x24 with a row selected (its mechanism under the table)."""

VERDICT_SHOTS = [("verdicts-120x36", (120, 36)), ("verdicts-80x24", (80, 24))]
"""The finished quick-demo run: intervals in the duration pane, verdicts in the table."""

FK_TIMING = recordings_dir() / "fk-timing-restore.pgwx"
"""The shipped fk-timing-restore recording (the deferred FK's check at COMMIT)."""

PRESENTER_SHOTS: list[tuple[str, tuple[int, int], Path, int | None]] = [
    ("presenter-100x30", (100, 30), FK_TIMING, None),
    ("presenter-mid-run-100x30", (100, 30), FIXTURE, MID_RUN),
    ("summary-card-fk-timing-120x36", (120, 36), FK_TIMING, None),
    ("presenter-160x45", (160, 45), FK_TIMING, None),
]
"""(file name, size, recording, events to replay): the presenter layout a projector's 100x30
gets by itself — fk-timing-restore's end card under its verdict in large digits, and the
durability run mid-matrix (bars beside the chart) — fk-timing-restore's end card in the
usual layout, and at 160x45 with `P` (the 5-row digits, the bars under the card)."""


async def shoot(
    name: str,
    size: tuple[int, int],
    upto: int | None,
    keys: tuple[str, ...],
    scratch: Path,
    fixture: Path = FIXTURE,
) -> Path:
    """Replay, press the keys, save one SVG."""
    source = ReplaySource.from_file(fixture)
    if upto is not None:
        source = source.upto(upto)
    app = PgwxApp(replay=source, store=ResultStore(scratch / f"{name}.sqlite"), ascii=False)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause(0.6)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.4)
        return Path(app.save_screenshot(f"{name}.svg", str(OUT)))


REPLAY_SHOTS = [("replay-120x36", (120, 36)), ("replay-80x24", (80, 24))]
"""The shipped fk-timing-restore recording, paused at 4× while the deferred FK's check runs
at COMMIT: the replay header, the phase rules on the chart, the highlighted phase."""


async def shoot_in_commit(
    name: str, size: tuple[int, int], scratch: Path, key: str, settle: float
) -> Path:
    """Replay the shipped fk-timing-restore recording at 4×, pause, seek a few events into
    the last deferred COMMIT (so its rule has data after it), press `key`, save one SVG."""
    source = ReplaySource.from_file(FK_TIMING, speed=4)
    app = PgwxApp(replay=source, store=ResultStore(scratch / f"{name}.sqlite"), ascii=False)
    async with app.run_test(size=size) as pilot:
        lab = app.lab
        player = lab.controller.player
        assert player is not None
        await pilot.press("space")
        commits = [
            b
            for b in player.boundaries
            if getattr(source.events[b], "phase", "") == "commit"
            and getattr(source.events[b], "variant", "") == "deferred"
        ]
        lab.controller.seek(commits[-1] + 4)
        await pilot.pause(0.6)
        await pilot.press(key)
        await pilot.pause(settle)
        return Path(app.save_screenshot(f"{name}.svg", str(OUT)))


async def shoot_replay(name: str, size: tuple[int, int], scratch: Path) -> Path:
    """In the deferred COMMIT, `l`: the WAL chart (its tab at 80x24), rules showing phases."""
    return await shoot_in_commit(name, size, scratch, "l", 0.4)


JUMP_SHOTS = [("replay-jump-120x36", (120, 36)), ("replay-jump-80x24", (80, 24))]
"""fk-timing-restore replayed, paused in the last deferred COMMIT, then `[`: the screen a
jump back to the previous phase shows (header, bars and chart at that moment)."""


async def shoot_jump(name: str, size: tuple[int, int], scratch: Path) -> Path:
    """In the deferred COMMIT, `[`: the screen a jump back to the previous phase shows."""
    return await shoot_in_commit(name, size, scratch, "left_square_bracket", 0.6)


SWEEP = ROOT / "tests" / "fixtures" / "max-wal-size-sweep.pgwx"
"""A real max_wal_size sweep (`pgwx run max-wal-size --scale 0.5 --repeats 8` on the bundled
18, exported with `pgwx export --redact-host`)."""
SWEEP_SHOTS = [("sweep-120x36", (120, 36), ("v",)), ("sweep-80x24", (80, 24), ("v",))]
"""The sweep's curve (`v`): the ratio chart in the grid's narrow chart pane at 120x36, and
at 80x24 the ratio beside the mechanism (checkpoints, FPI, WAL) in the chart tab."""


def stabilise(path: Path) -> None:
    """Replace Rich's random SVG ids, so an unchanged screen makes an unchanged file."""
    path.write_text(re.sub(r"\bterminal-\d+-", "terminal-pgwx-", path.read_text()))


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name, size, upto, keys in SHOTS:
            path = await shoot(name, size, upto, keys, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in VERDICT_SHOTS:
            path = await shoot(name, size, None, (), Path(scratch), VERDICTS)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in REPLAY_SHOTS:
            path = await shoot_replay(name, size, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size, fixture, upto in PRESENTER_SHOTS:
            keys = ("P",) if size[1] > 30 and name.startswith("presenter") else ()
            path = await shoot(name, size, upto, keys, Path(scratch), fixture)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in JUMP_SHOTS:
            path = await shoot_jump(name, size, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size, keys in SWEEP_SHOTS:
            path = await shoot(name, size, None, keys, Path(scratch), SWEEP)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")


if __name__ == "__main__":
    asyncio.run(main())
