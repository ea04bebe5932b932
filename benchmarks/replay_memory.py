"""Memory and key latency while an hour-long recording replays at 16×.

    python benchmarks/replay_memory.py [--minutes 60] [--speed 16] [--size 120x36]
    python benchmarks/replay_memory.py --smoke   # one trial's recording, a few presses (CI)

Builds a synthetic recording of `--minutes` of run (samples every 0.25 s, shaped like the
real samples of tests/fixtures/durability.json, 2-minute trials of three phases), writes it
as a .pgwx file, and replays it in the app (App.run_test, headless) at `--speed`. Meanwhile
it presses the chart keys (i, w, l) one after another and times each press from posting the
key to the first screen update drawn after the chart rebuilt for the new view, as
tui_latency.py does. Prints the RSS after the replay (goal ≤ 150 MB) and the latency
(goal: median ≤ 50 ms, max ≤ 100 ms). No server is involved.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tui_latency import KEYS, Probe  # noqa: E402

from explorer.lab.store.recording import Recording, write_recording  # noqa: E402
from explorer.lab.store.replay import ReplaySource  # noqa: E402
from explorer.lab.store.results import ResultStore  # noqa: E402
from explorer.models import PhaseResult, Profile, RunRecord, TrialResult, Variant  # noqa: E402
from explorer.tui.app import PgwxApp  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "durability.json"
RSS_GOAL_MB, MEDIAN_GOAL_MS, MAX_GOAL_MS = 150.0, 50.0, 100.0
PHASES = ("copy", "update", "commit")
TRIAL_SECONDS = 120.0
"""Each synthetic trial: three phases of 40 s."""


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (or its peak, VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def synthetic(minutes: float) -> dict[str, Any]:
    """A recording of `minutes` of run: real sample shapes, fake clock and results."""
    fixture = json.loads(FIXTURE.read_text())
    started = next(e for e in fixture["events"] if e["kind"] == "run-started")
    templates = [e["sample"] for e in fixture["events"] if e["kind"] == "sample"]
    variants = ["logged", "unlogged", "temporary"]
    trials = int(minutes * 60 // TRIAL_SECONDS)
    run_id = "20261122-140300-0a0b0c"  # in pgwx's own format: a recording's id is checked
    events: list[dict[str, Any]] = [
        {**started, "at": 0.0, "run_id": run_id, "total_trials": trials, "profile": "hour"}
    ]
    results = []
    at, n = 0.0, 0
    for index in range(trials):
        variant, repeat = variants[index % 3], index // 3 + 1
        events.append(
            {
                "at": round(at, 3),
                "kind": "trial-started",
                "variant": variant,
                "repeat": repeat,
                "index": index + 1,
                "total": trials,
            }
        )
        phases = []
        for phase in PHASES:
            begin = at
            events.append(
                {
                    "at": round(at, 3),
                    "kind": "phase-started",
                    "variant": variant,
                    "repeat": repeat,
                    "phase": phase,
                }
            )
            while at < begin + TRIAL_SECONDS / len(PHASES):
                at += 0.25
                sample = copy.deepcopy(templates[n % len(templates)])
                sample["t"], n = round(at, 3), n + 1
                events.append({"at": round(at, 3), "kind": "sample", "sample": sample})
            result = PhaseResult(name=phase, seconds=at - begin).model_dump(mode="json")
            phases.append(result)
            events.append(
                {
                    "at": round(at, 3),
                    "kind": "phase-ended",
                    "variant": variant,
                    "repeat": repeat,
                    "result": result,
                }
            )
        trial = TrialResult(
            run_id=run_id,
            variant=variant,
            repeat=repeat,
            status="ok",
            started_at=dt.datetime(2026, 11, 22, 14, 3, tzinfo=dt.UTC),
            phases=[PhaseResult.model_validate(p) for p in phases],
        )
        results.append(trial)
        events.append(
            {"at": round(at, 3), "kind": "trial-ended", "result": trial.model_dump(mode="json")}
        )
    events.append({"at": round(at, 3), "kind": "run-ended", "run_id": run_id, "status": "finished"})
    profile = Profile(
        name="hour",
        title="one hour",
        workload="table-kind",
        variants=[Variant(name=v) for v in variants],
    )
    record = RunRecord.model_validate(
        {
            "id": run_id,
            "profile": profile.model_dump(mode="json"),
            "server": started["server"],
            "started_at": "2026-11-22T14:03:00Z",
            "status": "finished",
            "trials": [t.model_dump(mode="json") for t in results],
        }
    )
    rec = Recording.model_validate(
        {
            "exported_at": "2026-11-22T15:03:00Z",
            "run": record.model_dump(mode="json"),
            "events": events,
        }
    )
    return rec.model_dump(mode="json")


async def measure(args: argparse.Namespace, path: Path, base: Path) -> None:
    """Replay `path` in this (fresh) process and print the figures."""
    before = rss_mb()
    source = ReplaySource.from_file(path, speed=args.speed)
    loaded = rss_mb()
    w, h = (int(x) for x in args.size.split("x"))
    app = PgwxApp(replay=source, store=ResultStore(base / "r.sqlite"))
    latencies: list[float] = []
    t0 = time.perf_counter()
    async with app.run_test(size=(w, h)) as pilot:
        lab = app.lab
        lab.action_replay_pause()  # the reference: the same presses with the replay paused
        probe = Probe(app)
        await pilot.pause(0.5)
        paused: list[float] = []
        for n in range(args.idle_presses):
            key, words = KEYS[n % len(KEYS)]
            paused.append(await probe.press(app, key, words))
            await asyncio.sleep(args.gap)
        lab.action_replay_pause()
        t0 = time.perf_counter()
        n = 0
        while lab.view.status != "finished":
            key, words = KEYS[n % len(KEYS)]
            latencies.append(await probe.press(app, key, words))
            n += 1
            await asyncio.sleep(args.gap)
            probe.renders.clear()
            probe.displays.clear()
        await pilot.pause(0.5)
        after = rss_mb()
    took = time.perf_counter() - t0
    ms = [x * 1000 for x in latencies]
    if not ms:
        raise SystemExit("the replay ended before a key was pressed: lower --speed")
    median, worst = statistics.median(ms), max(ms)
    print(f"events: {len(source.events)}, replayed in {took:.0f} s at {args.speed:g}×")
    print(
        f"RSS: before load {before:.0f} MB, after load {loaded:.0f} MB, after replay {after:.0f} MB"
        f" (peak {rss_mb('VmHWM'):.0f} MB) — goal ≤ {RSS_GOAL_MB:.0f} MB"
    )
    ref = [x * 1000 for x in paused]
    print(
        f"reference, replay paused: median {statistics.median(ref):.1f} ms, max {max(ref):.1f} ms"
    )
    print(
        f"key-to-screen over {len(ms)} presses: median {median:.1f} ms, p95 "
        f"{sorted(ms)[round(0.95 * (len(ms) - 1))]:.1f} ms, max {worst:.1f} ms "
        f"— goal median ≤ {MEDIAN_GOAL_MS:.0f} ms, max ≤ {MAX_GOAL_MS:.0f} ms"
    )


SMOKE = {"minutes": 2.0, "speed": 40.0, "idle_presses": 2, "gap": 0.1}
"""`--smoke`: a few seconds for CI (one trial, replayed in 3 s)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--speed", type=float, default=16.0)
    parser.add_argument("--size", default="120x36")
    parser.add_argument("--idle-presses", type=int, default=12)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between key presses")
    parser.add_argument("--play", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="a few seconds' check (CI)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    with tempfile.TemporaryDirectory(prefix="pgwx-replay-bench-") as tmp:
        if args.play:
            asyncio.run(measure(args, args.play, Path(tmp)))
            return
        # Built here, measured in a fresh process: building it must not count as replaying.
        path = write_recording(synthetic(args.minutes), Path(tmp) / "hour.pgwx")
        print(f"recording: {args.minutes:g} min, {path.stat().st_size / 1e6:.1f} MB compressed")
        subprocess.run([sys.executable, __file__, *sys.argv[1:], "--play", str(path)], check=True)


if __name__ == "__main__":
    main()
