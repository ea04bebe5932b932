"""CPU a key costs on the app's event loop, headless, while a recorded run plays at its pace.

    python benchmarks/key_cpu.py [--sizes 80x24,120x36,160x45+present] [--cycles 8]
    python benchmarks/key_cpu.py --old 9f6e66e --rounds 2   # old and new code alternately
    python benchmarks/key_cpu.py --smoke   # one cycle at 80x24 (CI)

`terminal_latency.py` times what a real terminal sees and `tui_latency.py` the wall time of
a chart key against a live server; both move with the machine's load. This one counts the
CPU time the process spends from posting a key to the first screen update drawn after the
key was handled, the update's terminal output included (headless Textual skips encoding it;
here it is encoded as a terminal driver would). That is the work a key waits for on a loaded
machine, and what a background repaint landing beside it adds to.

The app replays the shipped fk-timing-restore recording at its recorded pace (speed 1),
jumped to a third of the way in: samples arrive four times a second, the periodic repaint
and the chart's redraws run as during a live matrix, so a chart key always draws newer data
than when that chart was last shown. The keys are one cycle of `terminal_latency.py`'s:
1 2 3 4 i w l, a quarter of a second apart. `WxH+present` opens the presenter layout
(`--present`).

`--old REF_OR_DIR` measures a second checkout too (a directory, or a commit extracted with
`git archive`), old and new alternately, the order swapped each round, each in its own
process with its own code first on sys.path, and prints new/old ratios of the pooled median
and p95 per size and per key. No goal is judged here: the goals are on key-to-screen time
(`terminal_latency.py`); this shows where CPU was cut.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from terminal_latency import checkout_of  # noqa: E402

SEQUENCE = ("1", "2", "3", "4", "i", "w", "l")
"""One cycle of keys, as terminal_latency.py presses them."""
GAP = 0.25
"""Seconds between a key's frame and the next key."""
SMOKE = {"sizes": "80x24", "cycles": 1, "rounds": 1}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def child(size: str, cycles: int) -> dict[str, list[float]]:
    """In this process (its code first on sys.path): CPU ms per key from post to frame."""
    from textual import events

    from explorer.lab.store.replay import ReplaySource, recordings_dir
    from explorer.lab.store.results import ResultStore
    from explorer.tui.app import PgwxApp

    dims, _, present = size.partition("+")
    w, h = (int(x) for x in dims.split("x"))
    source = ReplaySource.from_file(recordings_dir() / "fk-timing-restore.pgwx", speed=1.0)
    base = Path(tempfile.mkdtemp(prefix="pgwx-keycpu-", dir="/tmp"))
    os.environ["PGWX_STATE_DIR"] = str(base / "state")
    app = PgwxApp(
        replay=source,
        store=ResultStore(base / "r.sqlite"),
        ascii=False,
        present=True if present else None,
    )
    frames: list[float] = []
    display = app._display

    def spy(screen, renderable):
        display(screen, renderable)
        if renderable is not None:
            if hasattr(renderable, "render_segments"):
                renderable.render_segments(app.console)  # what a terminal driver encodes
            frames.append(time.process_time())

    app._display = spy  # type: ignore[method-assign]
    handled: list[float] = []
    out: dict[str, list[float]] = {key: [] for key in SEQUENCE}
    try:
        async with app.run_test(size=(w, h)) as pilot:
            lab = app.lab
            while lab.controller.player is None:
                await pilot.pause(0.05)
            lab.controller.seek(len(source.events) // 3)
            await pilot.pause(2.0)
            key_pressed = lab.key_pressed

            def spy_key() -> None:
                key_pressed()
                handled.append(time.process_time())

            lab.key_pressed = spy_key  # type: ignore[method-assign]
            for _ in range(cycles):
                for key in SEQUENCE:
                    await asyncio.sleep(GAP)
                    handled.clear()
                    t0 = time.process_time()
                    app.post_message(events.Key(key, key))
                    deadline = time.monotonic() + 5.0
                    while time.monotonic() < deadline:
                        await asyncio.sleep(0.0005)
                        if handled and any(t >= handled[0] for t in frames):
                            shown = next(t for t in frames if t >= handled[0])
                            out[key].append((shown - t0) * 1000)
                            break
                    frames.clear()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out


def run_child(code: Path, size: str, cycles: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", size, "--cycles", str(cycles)],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the run at {size} from {code} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(values: list[float]) -> str:
    if not values:
        return "no press"
    return f"{statistics.median(values):5.1f} / {pct(values, 95):5.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="80x24,120x36,160x45+present")
    parser.add_argument("--cycles", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--old", help="a commit or a directory with the old code")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(asyncio.run(child(args.child, args.cycles))))
        return
    if args.smoke:
        vars(args).update(SMOKE)
    scratch = Path(tempfile.mkdtemp(prefix="pgwx-keycpu-old-", dir="/tmp"))
    try:
        codes = {"new": ROOT}
        if args.old:
            codes["old"] = checkout_of(args.old, scratch)
        print(
            f"CPU per key, post to frame, ms (median / p95), {args.cycles} cycles a run, "
            f"{args.rounds} round(s); load average {os.getloadavg()[0]:.1f}"
        )
        for size in args.sizes.split(","):
            pooled: dict[str, dict[str, list[float]]] = {n: {} for n in codes}
            for r in range(args.rounds):
                order = list(codes) if r % 2 == 0 else list(reversed(codes))
                for name in order:
                    got = run_child(codes[name], size, args.cycles)
                    for key, values in got.items():
                        pooled[name].setdefault(key, []).extend(values)
                    every = [v for vs in got.values() for v in vs]
                    print(f"  {size} {name} round {r + 1}: all keys {summary(every)}")
            print(f"{size}:")
            for key in (*SEQUENCE, "all"):
                row = f"  {key:<4}"
                by_code: dict[str, list[float]] = {}
                for name in codes:
                    kept = pooled[name]
                    by_code[name] = (
                        [v for vs in kept.values() for v in vs] if key == "all" else kept[key]
                    )
                    row += f"  {name} {summary(by_code[name])}"
                if "old" in codes and by_code["old"] and by_code["new"]:
                    new, old = by_code["new"], by_code["old"]
                    med = statistics.median(new) / statistics.median(old)
                    p95 = pct(new, 95) / pct(old, 95)
                    row += f"   new/old {med:.2f}, {p95:.2f}"
                print(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
