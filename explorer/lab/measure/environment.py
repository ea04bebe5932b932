"""The run's environment: versions, settings, CPU, and how busy the machine was meanwhile.

`capture` reads what the server is (version, data checksums, io_method, the settings in
force) and what this machine is (CPU count and model) when the run starts. When the server
runs on this machine (bundled, a unix socket or localhost), `MachineLoad` reads /proc/stat
and /proc/loadavg at the start, after every trial and at the end: CPU time stolen by a
hypervisor, and other work competing with the server, make timings slower for reasons that
have nothing to do with the knob under test.

What those readings mean for the timings is judged in `explorer.analysis.conditions`.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import asyncpg

from explorer.lab.measure import machine
from explorer.models import Capabilities, CpuLoad, Environment
from explorer.server.connect import ConnectError, Target
from explorer.version import pgwx_version

ENV_SETTINGS = (
    "shared_buffers",
    "wal_buffers",
    "wal_level",
    "wal_compression",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "max_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "bgwriter_lru_maxpages",
    "effective_io_concurrency",
    "maintenance_work_mem",
    "work_mem",
    "max_parallel_workers_per_gather",
    "max_parallel_maintenance_workers",
    "autovacuum",
    "track_io_timing",
    "huge_pages",
    "jit",
    "wal_sync_method",
)
"""Settings that shape the write path, recorded with the run (absent ones are skipped)."""

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
"""Host names that are this machine."""

PROC = Path("/proc")
"""Where /proc/stat and /proc/loadavg are read (a test may point it elsewhere)."""


def cpu_model() -> str | None:
    """The CPU model name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        for line in (PROC / "cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def same_machine(target: Target) -> bool:
    """The server runs here: bundled, or reached over a unix socket or localhost."""
    if target.owned:
        return True
    try:
        host = target.connect_kwargs().get("host") or os.environ.get("PGHOST") or ""
    except ConnectError:
        return False
    hosts = [h.strip() for h in str(host).split(",") if h.strip()] or [""]
    # libpq's default (no host) is the local unix socket.
    return all(h == "" or h.startswith("/") or h in LOCAL_HOSTS for h in hosts)


async def capture(conn: asyncpg.Connection, caps: Capabilities, target: Target) -> Environment:
    """What the server and this machine are, at the start of a run."""
    rows = await conn.fetch(
        "SELECT name, current_setting(name) AS value FROM pg_settings "
        "WHERE name = ANY($1::text[]) ORDER BY name",
        [*ENV_SETTINGS, "data_checksums", "io_method"],
    )
    found = {r["name"]: r["value"] for r in rows}
    local = same_machine(target)
    # hidden from a role without pg_read_all_settings: then the row is absent, not an error
    data_dir = (
        await conn.fetchval("SELECT setting FROM pg_settings WHERE name = 'data_directory'")
        if local
        else None
    )
    mount = machine.mount_of(data_dir) if data_dir else None
    owned = target.bundled
    programs = None
    if owned is not None and owned.install is not None:
        kind = "bundled " if owned.is_bundled_build else ""
        programs = f"{kind}{owned.install.banner} in {owned.install.bindir}"
    return Environment(
        pgwx_version=pgwx_version(),
        server_version=caps.version,
        server_programs=programs,
        data_checksums=found["data_checksums"] == "on" if "data_checksums" in found else None,
        io_method=found.get("io_method"),
        settings={k: v for k, v in found.items() if k in ENV_SETTINGS},
        cpu_count=os.cpu_count(),
        cpu_model=cpu_model(),
        same_machine=local,
        os=machine.os_name(),
        kernel=machine.kernel(),
        memory_bytes=machine.memory_bytes(),
        machine_model=machine.machine_model(),
        instance_type=machine.instance_type(),
        data_fs=mount.fs if mount else None,
        data_device=mount.device if mount else None,
        data_mount=mount.point if mount else None,
    )


def _cpu_times() -> list[int] | None:
    """The aggregate 'cpu' line of /proc/stat: user nice system idle iowait irq softirq steal."""
    try:
        first = (PROC / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(x) for x in first[1:9]]
    return values + [0] * (8 - len(values))


def _loadavg() -> float | None:
    try:
        return float((PROC / "loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class MachineLoad:
    """CPU steal and load of this machine over a run (/proc deltas); no-op off Linux."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first = self.last = _cpu_times()
        self.loadavg_start = _loadavg()
        self.loadavg_max = self.loadavg_start
        self.steal_max = 0.0
        """Highest steal share between two consecutive readings."""

    def tick(self) -> None:
        """Read again (after each trial): the worst interval and load so far."""
        now = _cpu_times()
        if now is not None and self.last is not None:
            self.steal_max = max(self.steal_max, _shares(self.last, now)[1])
            self.last = now
        load = _loadavg()
        if load is not None:
            self.loadavg_max = max(load, self.loadavg_max or 0.0)

    def finish(self) -> CpuLoad | None:
        """The whole run's shares; None where /proc/stat cannot be read."""
        self.tick()
        if self.first is None or self.last is None:
            return None
        busy, steal, iowait = _shares(self.first, self.last)
        return CpuLoad(
            seconds=time.monotonic() - self.started,
            busy=busy,
            steal=steal,
            iowait=iowait,
            steal_max=self.steal_max,
            loadavg_start=self.loadavg_start,
            loadavg_end=_loadavg(),
            loadavg_max=self.loadavg_max,
        )


def _shares(before: list[int], after: list[int]) -> tuple[float, float, float]:
    """(busy, steal, iowait) shares of all CPU time between two /proc/stat readings."""
    d = [max(a - b, 0) for a, b in zip(after, before, strict=True)]
    whole = sum(d)
    if whole <= 0:
        return 0.0, 0.0, 0.0
    idle, iowait, steal = d[3], d[4], d[7]
    return (whole - idle - iowait - steal) / whole, steal / whole, iowait / whole
