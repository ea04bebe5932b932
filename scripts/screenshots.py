"""Regenerate screenshots/: `python scripts/screenshots.py` (all), or name some shots'
prefixes (`python scripts/screenshots.py servers`).

Every image is the app saving itself: the recorded durability run in
tests/fixtures/durability.json is replayed all at once, stopped mid-run or at its end; the
quick-demo fixture and the shipped fk-timing-restore recording give the verdicts, the
presenter layout's large type and a replay after a jump; a real recorded max_wal_size
sweep gives the sweep's curve (`v`). The servers' card is the one picture made from a run
this command performs: fk-timing-restore (none, immediate, deferred; at most 10 rounds) at a
small scale on Debian's PostgreSQL 15 and the bundled 18, through the app's `m` (a few
minutes; skipped, saying so, where PostgreSQL 15 is not installed) — its figures change from
run to run.
The replayed SVGs are made byte-stable (Rich's random ids replaced) so an unchanged screen
makes an unchanged file. Look at them as PNGs with `rsvg-convert -o /tmp/x.png x.svg`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.lab.profiles.catalog import load_profile  # noqa: E402
from explorer.lab.store.replay import ReplaySource, recordings_dir  # noqa: E402
from explorer.lab.store.results import ResultStore  # noqa: E402
from explorer.models import Profile  # noqa: E402
from explorer.tui.app import PgwxApp  # noqa: E402
from explorer.tui.widgets.summary import SummaryCard  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "durability.json"
VERDICTS = ROOT / "profiles" / "recordings" / "quick-demo.pgwx"
"""The shipped quick-demo recording (ten rounds on the bundled 18): the table's decided
`faster` beside its undecided phases (the five-round fixture decided nothing)."""
OUT = ROOT / "screenshots"
MID_RUN = 165
"""Events up to the second repeat's COPY of the baseline, 95% done."""

SHOTS: list[tuple[str, tuple[int, int], int | None, tuple[str, ...]]] = [
    ("main-120x36", (120, 36), MID_RUN, ()),
    ("main-80x24", (80, 24), MID_RUN, ()),
    ("activity-io-80x24", (80, 24), MID_RUN, ("i",)),
    ("results-120x36", (120, 36), None, ("p",)),
    ("waits-120x36", (120, 36), None, ("w",)),
    ("help-120x36", (120, 36), None, ("question_mark",)),
    ("mechanism-80x24", (80, 24), None, ("4", "down", "down", "down", "down")),
]
"""(file name, terminal size, events to replay (None: all), keys to press): the main
screen mid-run (wide and 80x24), its pg_stat_io view, the results after the matrix (COPY
phase compared), the wait events, the help, and the results pane at 80x24 with a row
selected (its mechanism under the table)."""

VERDICT_SHOTS = [("verdicts-120x36", (120, 36)), ("verdicts-80x24", (80, 24))]
"""The finished quick-demo recording: its card (faster, and why) in the duration pane."""

FK_TIMING = recordings_dir() / "fk-timing-restore.pgwx"
"""The shipped fk-timing-restore recording (the deferred FK's check at COMMIT)."""

PRESENTER_SHOTS: list[tuple[str, tuple[int, int], Path, int | None]] = [
    ("summary-card-80x24", (80, 24), FK_TIMING, None),
    ("presenter-100x30", (100, 30), FK_TIMING, None),
    ("presenter-mid-run-100x30", (100, 30), FIXTURE, MID_RUN),
    ("summary-card-fk-timing-120x36", (120, 36), FK_TIMING, None),
    ("presenter-160x45", (160, 45), FK_TIMING, None),
]
"""(file name, size, recording, events to replay): fk-timing-restore's end card at 80x24
(decided verdicts, not the durability fixture's `0.73×?`), the presenter layout a projector's
100x30 gets by itself — fk-timing-restore's end card under its verdict in large digits, and the
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


SERVERS_SHOTS = [("servers-card-120x36", (120, 36)), ("servers-card-160x45", (160, 45))]
"""A real run on PostgreSQL 15 and 18 ended: its card (the biggest verdict between the
servers, each server's lines) in the usual layout, and at 160x45 in the presenter layout
(`P`: the pair's ratio in large digits, the bars of each variant on each server under it)."""
SERVERS_PROFILE, SERVERS_SCALE = "fk-timing-restore", 0.01
"""What the servers' run runs: the deferred FK's cost shows on both servers at any size."""
SERVERS_VARIANTS = ("none", "immediate", "deferred")
SERVERS_MAX_REPEATS = 10
"""Three of its variants and at most 10 rounds: a few minutes on two servers, not an hour."""


def servers_profile() -> Profile:
    """The shipped profile, cut to `SERVERS_VARIANTS` and `SERVERS_MAX_REPEATS` rounds."""
    profile = load_profile(SERVERS_PROFILE)
    keep = [v for v in profile.variants if v.name in SERVERS_VARIANTS]
    return profile.model_copy(update={"variants": keep, "max_repeats": SERVERS_MAX_REPEATS})


PG15_BIN = Path("/usr/lib/postgresql/15/bin")


async def _until(check: Callable[[], bool], pilot: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"servers' run: gave up after {timeout:.0f} s")
        await pilot.pause(0.2)  # type: ignore[attr-defined]


def cluster_home() -> Path:
    """A directory of their own for the servers' clusters (short: their sockets are in it;
    open to the servers' user, who must reach them)."""
    home = Path(tempfile.mkdtemp(prefix="pgwx-shots-", dir="/tmp"))
    home.chmod(0o755)
    return home


async def shoot_servers(scratch: Path) -> list[Path]:
    """Run SERVERS_PROFILE on PostgreSQL 15 and the bundled 18 through the app, then save
    the end card at each of SERVERS_SHOTS' sizes."""
    if not (PG15_BIN / "initdb").exists():
        print(f"servers-card-*: skipped, PostgreSQL 15 is not installed at {PG15_BIN}")
        return []
    home = cluster_home()
    os.environ["PGWX_CLUSTER_HOME"] = str(home)
    os.environ["PGWX_STATE_DIR"] = str(scratch / "state")
    store = ResultStore(scratch / "servers.sqlite")
    profiles = [servers_profile()]
    app = PgwxApp(servers=[(None, 15), (None, 18)], store=store, profiles=profiles, ascii=False)
    saved = []
    try:
        async with app.run_test(size=SERVERS_SHOTS[0][1]) as pilot:
            lab = app.lab
            panel = lab.knob_panel
            await _until(lambda: len(panel.server_boxes) == 2, pilot, 180)
            panel.choose_profile(SERVERS_PROFILE)
            panel.select("scale").value = SERVERS_SCALE
            await pilot.pause(0.3)
            await pilot.press("m")
            await _until(lambda: lab.view.status == "running", pilot, 60)
            await _until(lambda: lab.view.status != "running", pilot, 1200)
            card = lab.query_one(SummaryCard)
            await _until(lambda: card.display and card.servers is not None, pilot, 60)
            for name, size in SERVERS_SHOTS:
                await pilot.resize_terminal(*size)
                await pilot.pause(0.6)
                if size[0] >= 160:
                    await pilot.press("P")  # the presenter layout, as a projector gets it
                await pilot.pause(0.8)
                saved.append(Path(app.save_screenshot(f"{name}.svg", str(OUT))))
            await pilot.press("q")
            await _until(lambda: not app.is_running, pilot, 60)
    finally:
        store.close()
        shutil.rmtree(home, ignore_errors=True)
    return saved


SWEEP = ROOT / "tests" / "fixtures" / "max-wal-size-sweep.pgwx"
"""A real max_wal_size sweep (`pgwx run max-wal-size --scale 0.4 --repeats 6` on the bundled
18, exported with `pgwx export --redact-host`)."""
SWEEP_SHOTS = [("sweep-120x36", (120, 36), ("v",)), ("sweep-80x24", (80, 24), ("v",))]
"""The sweep's curve (`v`): the ratio chart in the grid's narrow chart pane at 120x36, and
at 80x24 the ratio beside the mechanism (checkpoints, FPI, WAL) in the chart tab."""


def stabilise(path: Path) -> None:
    """Replace Rich's random SVG ids, so an unchanged screen makes an unchanged file."""
    path.write_text(re.sub(r"\bterminal-\d+-", "terminal-pgwx-", path.read_text()))


def wanted(name: str) -> bool:
    """A shot this command was asked for: all of them, or those whose name starts with one
    of the arguments."""
    asked = sys.argv[1:]
    return not asked or any(name.startswith(a) for a in asked)


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        if any(wanted(name) for name, _ in SERVERS_SHOTS):
            for path in await shoot_servers(Path(scratch)):
                stabilise(path)
                print(f"{path.relative_to(ROOT)}  (a run on PostgreSQL 15 and 18)")
        for name, size, upto, keys in SHOTS:
            if not wanted(name):
                continue
            path = await shoot(name, size, upto, keys, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in VERDICT_SHOTS:
            if not wanted(name):
                continue
            path = await shoot(name, size, None, (), Path(scratch), VERDICTS)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in REPLAY_SHOTS:
            if not wanted(name):
                continue
            path = await shoot_replay(name, size, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size, fixture, upto in PRESENTER_SHOTS:
            if not wanted(name):
                continue
            keys = ("P",) if size[1] > 30 and name.startswith("presenter") else ()
            path = await shoot(name, size, upto, keys, Path(scratch), fixture)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size in JUMP_SHOTS:
            if not wanted(name):
                continue
            path = await shoot_jump(name, size, Path(scratch))
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")
        for name, size, keys in SWEEP_SHOTS:
            if not wanted(name):
                continue
            path = await shoot(name, size, None, keys, Path(scratch), SWEEP)
            stabilise(path)
            print(f"{path.relative_to(ROOT)}  {size[0]}x{size[1]}")


if __name__ == "__main__":
    asyncio.run(main())
