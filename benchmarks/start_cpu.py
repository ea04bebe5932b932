"""CPU and wall time from starting `pgwx` to its first frame, headless (issue 39, point 7).

Each start is a fresh `python -c` process that runs `pgwx` (`explorer.cli.entry.main`, as the
command does) headless at 80x24, notes the process's CPU time (user + system, the interpreter's
start included) and the wall time since the process began when the app hands the terminal driver
the lab's first frame with the footer's keys laid out (the frame `? Help` and `q Quit` are in),
and quits. Two modes: `bundled` (plain `pgwx`: the
bundled server is started in a private data directory, made once, untimed, so the starts are
warm, as is the bytecode, written under a temporary directory whatever
PYTHONDONTWRITEBYTECODE says) and `replay` (`pgwx replay` of the shipped durability recording).

`--old REF_OR_DIR` runs a second checkout too, old and new alternately, and prints new/old of
the medians. Headless, the frame is composed but not turned into escape codes, so these figures
are a little below what a terminal costs; `terminal_latency.py --starts N` times a real one.

    python benchmarks/start_cpu.py --old 9f6e66e --starts 6
    python benchmarks/start_cpu.py --smoke   # one replay start (CI)
"""

from __future__ import annotations

import argparse
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

from terminal_latency import app_env, checkout_of  # noqa: E402

RECORDING = ROOT / "tests" / "fixtures" / "durability.json"

PROBE = """
import resource, sys, time
from textual.app import App
from explorer.cli.entry import main

started = float(sys.argv[1])
real_run, real_display = App.run, App._display

def run(self, *args, **kwargs):
    return real_run(self, headless=True, size=(80, 24))

def display(self, screen, renderable):
    real_display(self, screen, renderable)
    if renderable is not None and type(screen).__name__ == "LabScreen":
        keys = screen.query("FooterKey")
        if any(k.region.area for k in keys) and not getattr(self, "_probe_done", False):
            self._probe_done = True
            use = resource.getrusage(resource.RUSAGE_SELF)
            cpu, wall = use.ru_utime + use.ru_stime, time.time() - started
            print(f"FIRST {cpu:.4f} {wall:.4f}", flush=True)
            self.call_later(self.exit)

App.run, App._display = run, display
sys.exit(main(sys.argv[2:]))
"""


def one_start(root: Path, argv: list[str], env: dict[str, str]) -> tuple[float, float] | None:
    """(CPU seconds, wall seconds) to the first frame of one fresh process, None if none."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, repr(time.time()), *argv],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(root)},
        cwd=root,
        timeout=120,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("FIRST "):
            cpu, wall = line.split()[1:]
            return float(cpu), float(wall)
    print(f"  no first frame from {root}: {proc.stderr[-600:]!r}", file=sys.stderr)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=6, help="timed starts of each checkout")
    parser.add_argument("--modes", default="bundled,replay", help="bundled, replay or both")
    parser.add_argument("--old", default=None, help="old code: a checkout or a commit")
    parser.add_argument("--smoke", action="store_true", help="one replay start (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.starts, args.modes = 1, "replay"
    tmp = Path(tempfile.mkdtemp(prefix="pgwx-start-"))
    os.chmod(tmp, 0o755)
    env = app_env(os.environ, tmp)  # each start sets PYTHONPATH to its own checkout
    load = os.getloadavg()
    print(
        f"pgwx start to its first frame, headless 80x24; {os.cpu_count()} CPUs, "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    try:
        codes = [("new", ROOT)]
        if args.old is not None:
            codes = [("old", checkout_of(args.old, tmp)), *codes]
            print(f"  old: {args.old} at {codes[0][1]}; new: this checkout ({ROOT})")
        for mode in args.modes.split(","):
            argv = {
                "bundled": ["--data-dir", str(tmp / "pg")],
                "replay": ["replay", str(RECORDING), "--speed", "1"],
            }[mode]
            for _, root in codes:
                one_start(root, argv, env)  # untimed: bytecode, page cache, the data directory
            got: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in codes}
            for i in range(args.starts):
                for name, root in codes if i % 2 == 0 else codes[::-1]:
                    took = one_start(root, argv, env)
                    if took is not None:
                        got[name].append(took)
            for name, _ in codes:
                cpu = [c for c, _ in got[name]]
                wall = [w for _, w in got[name]]
                if not cpu:
                    print(f"  {mode:8} {name}: no first frame")
                    continue
                print(
                    f"  {mode:8} {name}: CPU median {statistics.median(cpu):.3f} s "
                    f"({min(cpu):.3f}–{max(cpu):.3f}), wall median {statistics.median(wall):.3f} s "
                    f"({min(wall):.3f}–{max(wall):.3f}), n={len(cpu)}"
                )
            if len(codes) == 2 and all(got.values()):
                old, new = (got[name] for name, _ in codes)
                cpu_ratio = statistics.median(c for c, _ in new) / statistics.median(
                    c for c, _ in old
                )
                wall_ratio = statistics.median(w for _, w in new) / statistics.median(
                    w for _, w in old
                )
                print(f"  {mode:8} new/old: CPU {cpu_ratio:.2f}, wall {wall_ratio:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"  load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
