"""What sampling at 10 Hz costs a write workload: pgbench throughput with and without it.

Starts a private bundled PostgreSQL 18 in a temporary directory, loads `pgbench -i -s 1`, and
runs an 8-client insert-only pgbench load two ways:

1. Interleaved pairs of whole runs, one with the sampler polling at 10 Hz and one without,
   the order alternating from pair to pair; prints the median ratio (with / without) and
   its min–max spread.
2. One continuous run with the sampler switched on and off every 2 s, comparing pgbench's
   per-second throughput of "on" and "off" seconds. Slow drift of the machine (other jobs
   on a shared host) cancels out here, which it does not between whole runs.

It also prints the CPU the sampling costs: the sampler backend's CPU time from /proc, the
poll round trips × polls per second (an upper bound), and this process's own CPU.

    python benchmarks/sampler_overhead.py [--pairs 5] [--seconds 10] [--alternate 60]
    python benchmarks/sampler_overhead.py --smoke   # one short pair and a short alternating run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from explorer.lab.measure.sampler import Sampler
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

RATIO_GOAL = 0.98
"""Throughput with the sampler must stay within 2% of without."""
CPU_GOAL = 1.0
"""Sampling may cost at most this percentage of one core on the server."""
SWITCH_SECONDS = 2
"""Seconds of each on/off window of the alternating measurement (pgbench reports per second)."""
SCRIPT = """\\set aid random(1, 100000)
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
VALUES (1, 1, :aid, 1, CURRENT_TIMESTAMP);
"""
"""Insert-only transaction: the write path, without update contention."""
SMOKE = {"pairs": 1, "seconds": 1, "alternate": 5}
"""`--smoke`: a few seconds for CI, still both measurements (5 s alternate: on, then off)."""
_PROGRESS = re.compile(r"progress: [\d.]+ s, ([\d.]+) tps")


@dataclass
class Cost:
    """What one sampled run cost."""

    seconds: float
    """Wall time the sampler ran."""
    backend_cpu: float
    """CPU seconds of the sampler's server backend (from /proc)."""
    client_cpu: float
    """CPU seconds of this Python process (the sampler's client side)."""
    polls: int
    """Queries the sampler sent (counter polls + wait-only polls)."""
    round_trip: float
    """Summed round-trip seconds of those queries."""


def _proc_cpu(pid: int | None) -> float:
    """utime + stime of a local process in seconds; 0 when it cannot be read."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    """The server, the pgbench command and the sampler shared by every measurement."""

    def __init__(
        self, server: LocalServer, env: dict[str, str], script: Path, args: argparse.Namespace
    ) -> None:
        self.server = server
        self.env = env
        self.script = script
        self.args = args
        self.target = Target(bundled=server)

    def pgbench(self, seconds: float, *extra: str) -> list[str]:
        """The pgbench command line for one load of `seconds`."""
        a = self.args
        return [
            str(self.server.tool("pgbench")),
            "-n",
            "-c",
            str(a.clients),
            "-j",
            str(a.jobs),
            "-T",
            str(int(seconds)),
            "-f",
            str(self.script),
            *extra,
        ]

    async def run_load(self, seconds: float) -> float:
        """One pgbench run; its tps."""
        proc = await asyncio.create_subprocess_exec(
            *self.pgbench(seconds),
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        found = re.search(r"tps = ([\d.]+)", out.decode())
        if proc.returncode != 0 or not found:
            sys.exit(f"pgbench failed: {err.decode().strip() or out.decode().strip()}")
        return float(found.group(1))

    async def settle(self, admin) -> None:
        """Same starting point for every run: empty history table, fresh checkpoint."""
        await admin.execute("TRUNCATE pgbench_history")
        await admin.execute("CHECKPOINT")
        await asyncio.sleep(1.0)

    async def sampled(self, sampler: Sampler, seconds: float) -> tuple[float, Cost]:
        """One pgbench run with the sampler polling throughout; its tps and the sampler's cost."""
        sampler.poll_seconds.clear()
        sampler.wait_poll_seconds.clear()
        task = asyncio.create_task(sampler.run(lambda _sample: None))
        if not await sampler.sample_now(timeout=10):
            sys.exit("the sampler did not connect")
        pid = sampler.backend_pid
        cpu0, client0, t0 = _proc_cpu(pid), time.process_time(), time.monotonic()
        tps = await self.run_load(seconds)
        cost = Cost(
            seconds=time.monotonic() - t0,
            backend_cpu=_proc_cpu(pid) - cpu0,
            client_cpu=time.process_time() - client0,
            polls=len(sampler.poll_seconds) + len(sampler.wait_poll_seconds),
            round_trip=sum(sampler.poll_seconds) + sum(sampler.wait_poll_seconds),
        )
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return tps, cost

    async def pairs(self, admin, sampler: Sampler) -> tuple[list[float], list[Cost]]:
        """Whole runs with and without, interleaved; the ratios and the sampled runs' costs."""
        ratios: list[float] = []
        costs: list[Cost] = []
        for pair in range(self.args.pairs):
            tps: dict[str, float] = {}
            # Alternate which goes first, so a drifting machine does not favour one side.
            for mode in ("with", "without") if pair % 2 == 0 else ("without", "with"):
                await self.settle(admin)
                if mode == "with":
                    tps[mode], cost = await self.sampled(sampler, self.args.seconds)
                    costs.append(cost)
                else:
                    tps[mode] = await self.run_load(self.args.seconds)
            ratios.append(tps["with"] / tps["without"])
            print(
                f"  pair {pair + 1}: without {tps['without']:8.1f} tps   with "
                f"{tps['with']:8.1f} tps   ratio {ratios[-1]:.3f}",
                flush=True,
            )
        return ratios, costs

    async def alternating(self, admin, sampler: Sampler) -> tuple[list[float], list[float]]:
        """One run, sampler on and off every SWITCH_SECONDS; per-second tps of each state.

        The switch happens as each progress line arrives, so every second lies wholly in one
        state and none is thrown away.
        """
        await self.settle(admin)
        proc = await asyncio.create_subprocess_exec(
            *self.pgbench(self.args.alternate, "-P", "1"),
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stderr is not None
        seconds: dict[bool, list[float]] = {True: [], False: []}
        task: asyncio.Task[None] | None = None
        lines = 0
        while line := await proc.stderr.readline():
            found = _PROGRESS.search(line.decode())
            if not found:
                continue
            lines += 1
            if lines > SWITCH_SECONDS:  # the first window is pgbench connecting and warming up
                seconds[task is not None].append(float(found.group(1)))
            if lines % SWITCH_SECONDS == 0:
                if task is None:
                    task = asyncio.create_task(sampler.run(lambda _sample: None))
                else:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    task = None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await proc.wait()
        return seconds[True], seconds[False]


async def measure(bench: Bench) -> None:
    """Run both measurements and print them against the goals."""
    args = bench.args
    admin = await bench.target.connect("bench")
    caps = await probe(admin, owned=True)
    await admin.execute(f"ALTER SYSTEM SET synchronous_commit = {args.synchronous_commit}")
    await admin.execute("SELECT pg_reload_conf()")
    # Insert-driven autovacuum of the history table would land in random runs.
    await admin.execute("ALTER TABLE pgbench_history SET (autovacuum_enabled = off)")
    sampler = Sampler(bench.target, caps, interval=args.interval, wait_interval=args.interval)
    print(
        f"PostgreSQL {caps.version}, synchronous_commit={args.synchronous_commit}, "
        f"{args.clients} clients, sampler every {args.interval} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"Interleaved pairs: {args.pairs} × {args.seconds} s each way")
    ratios, costs = await bench.pairs(admin, sampler)
    on: list[float] = []
    off: list[float] = []
    if args.alternate > 0:
        print(f"Alternating: one {args.alternate} s run, sampler on/off every {SWITCH_SECONDS} s")
        on, off = await bench.alternating(admin, sampler)
    await admin.close()

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    ratio = statistics.median(ratios)
    print()
    print(
        f"throughput with/without (pairs):  median {ratio:.3f} (min {min(ratios):.3f}, "
        f"max {max(ratios):.3f})   goal ≥ {RATIO_GOAL}: {verdict(ratio >= RATIO_GOAL)}"
    )
    if on and off:
        alt = statistics.mean(on) / statistics.mean(off)
        print(
            f"throughput on/off (alternating):  {alt:.3f} over {len(on)} + {len(off)} "
            f"seconds (median-based {statistics.median(on) / statistics.median(off):.3f})"
            f"   goal ≥ {RATIO_GOAL}: {verdict(alt >= RATIO_GOAL)}"
        )
    seconds = sum(c.seconds for c in costs)
    polls = sum(c.polls for c in costs)
    round_trip = sum(c.round_trip for c in costs)
    backend_pct = 100 * sum(c.backend_cpu for c in costs) / seconds
    print(
        f"server CPU of sampling:           {backend_pct:.2f}% of one core (sampler backend, "
        f"/proc)   goal ≤ {CPU_GOAL}%: {verdict(backend_pct <= CPU_GOAL)}"
    )
    print(
        f"poll round trip:                  {1000 * round_trip / polls:.2f} ms × "
        f"{polls / seconds:.1f} polls/s = {100 * round_trip / seconds:.2f}% of one core "
        "(upper bound: includes client and socket time)"
    )
    client_pct = 100 * sum(c.client_cpu for c in costs) / seconds
    print(f"client CPU (this Python process): {client_pct:.2f}% of one core")
    # Drift-free bound: a CPU-bound load can lose at most the CPU share the sampling takes.
    share = (backend_pct + client_pct) / (os.cpu_count() or 1)
    print(
        f"sampling's share of all {os.cpu_count()} CPUs:   {share:.2f}% → expected throughput "
        f"ratio ≥ {1 - share / 100:.3f} on a CPU-bound load (server and client on this host)"
    )
    print(
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        " (other jobs on the host widen the spread of the pairs)"
    )


def main(args: argparse.Namespace) -> None:
    """Start a private server, measure, and remove the server."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-bench-", dir="/tmp"))
    base.chmod(0o755)  # the server's own user must reach its directory below
    server = LocalServer(base / "pg18")
    try:
        server.start()
        env = Target(bundled=server).tool_env()
        init = subprocess.run(
            [str(server.tool("pgbench")), "-i", "-s", "1", "-q"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            sys.exit(f"pgbench -i failed: {init.stderr.strip()}")
        script = base / "insert.sql"
        script.write_text(SCRIPT)
        # Tagged as workload, so the sampler watches pgbench's waits as it would a real run's.
        env["PGAPPNAME"] = "pgwx-work-bench"
        asyncio.run(measure(Bench(server, env, script, args)))
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add: Callable[..., object] = parser.add_argument
    add("--pairs", type=int, default=5, help="with/without pairs of whole runs (default 5)")
    add("--seconds", type=int, default=10, help="seconds of each whole run (default 10)")
    add(
        "--alternate",
        type=int,
        default=40,
        help="seconds of the on/off alternating run, 0 to skip (default 40)",
    )
    add("--clients", type=int, default=8, help="pgbench clients (default 8)")
    add("--jobs", type=int, default=2, help="pgbench threads (default 2)")
    add(
        "--interval",
        type=float,
        default=0.1,
        help="sampler interval and wait interval in seconds (default 0.1 = 10 Hz)",
    )
    add(
        "--synchronous-commit",
        choices=("on", "off"),
        default="off",
        help="off (default) makes the load CPU-bound, the sampler's worst case; on makes "
        "it bound by WAL fsync latency",
    )
    add("--smoke", action="store_true", help="a few seconds' check that it still works (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    return args


if __name__ == "__main__":
    main(parse_args())
