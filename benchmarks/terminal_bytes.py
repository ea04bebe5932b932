"""How many bytes a second the app writes to the terminal, during a run and while idle.

    python benchmarks/terminal_bytes.py [--size 80x24] [--idle 10] [--timeout 300]
    python benchmarks/terminal_bytes.py --smoke   # 1 s quiet stretches, the run cancelled (CI)

Runs the real app (`python -m explorer.cli`) in a pseudo-terminal of the given size, with a
throwaway bundled PostgreSQL 18 (--data-dir in a temp directory) and a throwaway results
store, waits until it is connected, measures a quiet stretch (nothing on screen changes),
presses `m` to run the quick-demo matrix, measures until the run is stored as finished, then
another quiet stretch, and quits with `q`. Every byte the app writes is counted, as an SSH
link would carry it. Goals (issue 11): ≤ 8 KB/s on average during the run, ≤ 1 KB/s while
nothing on screen changes.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import BinaryIO

ROOT = Path(__file__).resolve().parents[1]
GOAL_RUN = 8 * 1024
GOAL_IDLE = 1024
SMOKE = {"idle": 1.0, "cancel_after": 2.0, "timeout": 120.0}
"""`--smoke`: a few seconds for CI; the matrix is cancelled (`c`) this long after it starts."""


class Terminal:
    """The app in a pty: everything it writes is counted with a timestamp."""

    def __init__(self, argv: list[str], env: dict[str, str], cols: int, rows: int) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.chunks: list[tuple[float, int]] = []
        self.tail = b""
        self.dump: BinaryIO | None = None
        """Where to copy the raw output (--dump), to see which rows are repainted."""

    def pump(self, seconds: float) -> None:
        """Read what the app writes for `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], min(left, 0.1))
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append((time.monotonic(), len(data)))
            self.tail = (self.tail + data)[-200_000:]
            if self.dump is not None:
                self.dump.write(data)

    def press(self, key: str) -> None:
        os.write(self.master, key.encode())

    def rate(self, start: float, end: float) -> float:
        """Bytes per second written between two instants."""
        total = sum(n for t, n in self.chunks if start <= t < end)
        return total / max(end - start, 1e-9)


def finished_runs(db: Path) -> int:
    """Runs the app stored as ended (any status), read straight from the store."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as con:
            row = con.execute("SELECT count(*) FROM runs WHERE status != 'running'").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="80x24")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of each quiet stretch")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--dump", type=Path, help="also write the raw terminal output here")
    parser.add_argument("--seconds", action="store_true", help="print KB written each second")
    parser.add_argument(
        "--cancel-after", type=float, help="cancel the matrix (c) this many seconds in"
    )
    parser.add_argument("--smoke", action="store_true", help="a few seconds' check (CI)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    cols, rows = (int(n) for n in args.size.split("x"))
    tmp = Path(tempfile.mkdtemp(prefix="pgwx-bytes-"))
    os.chmod(tmp, 0o755)
    db = tmp / "results.sqlite"
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "PGWX_RESULTS": str(db),
        "PGWX_STATE_DIR": str(tmp / "state"),
        "PYTHONPATH": str(ROOT),
        "LANG": "C.UTF-8",
    }
    for name in ("PGHOST", "PGPORT", "PGSERVICE", "PGDATABASE", "PGUSER", "NO_COLOR"):
        env.pop(name, None)
    argv = [sys.executable, "-m", "explorer.cli", "--data-dir", str(tmp / "pg")]
    term = Terminal(argv, env, cols, rows)
    if args.dump:
        term.dump = args.dump.open("wb")
    try:
        # Connected: the knob panel is filled and the server answered; wait for the output
        # to settle (the first paint and the probe's log lines).
        deadline = time.monotonic() + args.timeout
        while b"connected" not in term.tail and time.monotonic() < deadline:
            term.pump(0.5)
        if b"connected" not in term.tail:
            print("the app did not connect; last output:", term.tail[-400:], file=sys.stderr)
            return 1
        term.pump(3.0)
        t0 = time.monotonic()
        term.pump(args.idle)
        idle_before = term.rate(t0, time.monotonic())

        term.press("m")
        t1 = time.monotonic()
        if args.cancel_after is not None:
            term.pump(args.cancel_after)
            term.press("c")
        while finished_runs(db) == 0 and time.monotonic() < t1 + args.timeout:
            term.pump(0.5)
        t2 = time.monotonic()
        during = term.rate(t1, t2)
        peak = max(
            (term.rate(t, t + 1.0) for t in [t1 + n for n in range(int(t2 - t1))]), default=0.0
        )
        term.pump(2.0)  # the last repaint after the run ends
        t3 = time.monotonic()
        term.pump(args.idle)
        idle_after = term.rate(t3, time.monotonic())
        cut = "" if args.cancel_after is None else f", cancelled after {args.cancel_after:g} s"
        print(f"terminal {cols}x{rows}, quick-demo matrix{cut}, {t2 - t1:.1f} s")
        print(
            f"  during the run : {during / 1024:6.2f} KB/s average, "
            f"{peak / 1024:.2f} KB/s busiest second "
            f"(goal ≤ {GOAL_RUN / 1024:.0f} KB/s average)"
        )
        print(f"  idle, before   : {idle_before / 1024:6.2f} KB/s (goal ≤ {GOAL_IDLE / 1024:.0f})")
        print(f"  idle, after    : {idle_after / 1024:6.2f} KB/s (goal ≤ {GOAL_IDLE / 1024:.0f})")
        if args.seconds:
            per = [term.rate(t1 + n, t1 + n + 1) / 1024 for n in range(int(t2 - t1) + 1)]
            print("  KB each second of the run:", " ".join(f"{k:.1f}" for k in per))
        ok = during <= GOAL_RUN and max(idle_before, idle_after) <= GOAL_IDLE
        print("  goals met" if ok else "  goals NOT met")
        return 0
    finally:
        term.press("q")
        try:
            term.pump(0.1)
            term.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(term.proc.pid, signal.SIGTERM)
            term.proc.wait(timeout=10)
        os.close(term.master)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
