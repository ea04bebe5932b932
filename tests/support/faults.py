"""Helpers for tests/faults/test_faults.py: servers a fault may break, a gate, what must hold.

The fault cases break servers (restart, SIGKILL the postmaster, fill the disk), so they run on
clusters of their own, never on the session's shared ones. A trial is held "mid-run" without
timing: its last phase waits for an advisory lock the test holds (the *gate*), so the fault
always lands while a workload statement runs, however slow the machine is.

Run as a module (`python -m tests.support.faults run …`) it is the real `pgwx` command line
with one fault point added: with PGWX_FAULT_PAUSE_IN_WRITE=N set, the Nth store write that
keeps a trial stops inside its transaction (after the INSERT, before COMMIT), says so on
stderr and waits to be killed — a SIGKILL "during a store write", deterministically.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg

from explorer.server.embedded import LocalServer
from tests.support.paths import ROOT
from tests.support.server import settings_and_auto_conf

GATE_KEY = 8_0808
"""Advisory lock key the gate phase waits for."""
PASSWORD = "f4ult-s3cret"
"""Password of the test roles (scram-sha-256); it must never show up anywhere pgwx writes."""
ROLE = "faulty"
"""A superuser that logs in with a password."""
LIMITED = "limited"
"""A role without superuser, pg_monitor or ALTER SYSTEM privilege."""
PAUSED = "pgwx-fault: paused inside a store write"


GATE_VARIANTS = {
    "sync-off": 'synchronous_commit = "off", track_io_timing = true',
    "unlogged": 'table_kind = "unlogged", synchronous_commit = "off"',
}
"""Two variants that both change server settings (neither risky)."""


def profile_toml(
    variants: dict[str, str] | None = None,
    *,
    gate: bool = True,
    rows: int = 2000,
    repeats: int = 1,
    pad: int = 200,
) -> str:
    """A sql-workload profile: create a table, load `rows` rows, then (`gate`) wait at the gate.

    Args:
        variants: Variant name → the inside of its `knobs = { … }`; GATE_VARIANTS by default.
        gate: End each trial with a phase that waits for the lock the test holds.
        rows: Rows the load phase inserts.
        repeats: Repeats of each variant.
        pad: Bytes of padding per row.
    """
    variants = GATE_VARIANTS if variants is None else variants
    text = f"""
title = "fault case"
workload = "sql"
repeats = {repeats}
settle_seconds = 0
warmup = 0
[params]
sizes = {{ rows = {rows} }}
[[params.tables]]
name = "t"
columns = "id int, pad text"
[[params.phases]]
name = "load"
sql = "INSERT INTO {{t}} SELECT i, repeat('x', {pad}) FROM generate_series(1, {{rows}}) AS i"
"""
    if gate:
        text += f"""[[params.phases]]
name = "gate"
sql = "SELECT pg_advisory_xact_lock({GATE_KEY})"
"""
    for name, knobs in variants.items():
        text += f'[[variants]]\nname = "{name}"\nknobs = {{ {knobs} }}\n'
    return text


async def wait_until(
    check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60.0
) -> None:
    """Poll `check` until it holds; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- the servers


class FaultServer:
    """A cluster of the test's own, reached as its superuser without pgwx in between.

    Args:
        server: The LocalServer (started).
    """

    def __init__(self, server: LocalServer) -> None:
        self.server = server

    def dsn(self, user: str = ROLE, password: str = PASSWORD) -> str:
        """A URI that reaches the cluster as `user` with a password, over its socket."""
        return f"postgresql://{user}:{password}@/postgres?host={self.server.socket_dir}&port=5432"

    async def admin(self) -> asyncpg.Connection:
        """A superuser session not named like pgwx's (so it never counts as one of them)."""
        kw = self.server.connect_kwargs()
        return await asyncpg.connect(
            **kw, timeout=30, server_settings={"application_name": "fault-test"}
        )

    async def sql(self, statement: str) -> None:
        """Run one statement as the superuser."""
        conn = await self.admin()
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    async def add_roles(self) -> None:
        """The password roles, and a pg_hba line that makes them use their password."""
        hba = self.server.data_dir / "pg_hba.conf"
        line = f"local all {ROLE},{LIMITED} scram-sha-256\n"
        text = hba.read_text()
        if line not in text:
            hba.write_text(line + text)  # first match wins: before the trust lines
        conn = await self.admin()
        try:
            await conn.execute("SET password_encryption = 'scram-sha-256'")
            await conn.execute(f"CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
            await conn.execute(f"CREATE ROLE {LIMITED} LOGIN PASSWORD '{PASSWORD}'")
            await conn.execute(f"GRANT CREATE ON DATABASE postgres TO {LIMITED}")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()
        # the password is really asked for (the trust lines below would let anyone in), once
        # the postmaster has read pg_hba.conf again
        kw = {**self.server.connect_kwargs(), "user": ROLE}

        async def refused() -> bool:
            try:
                other = await asyncpg.connect(**kw, timeout=30)
            except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError):
                return True
            await other.close()
            return False

        await wait_until(refused, f"{ROLE} to need its password", 30)

    def postmaster_pid(self) -> int:
        """The postmaster's pid, from postmaster.pid."""
        return int((self.server.data_dir / "postmaster.pid").read_text().split()[0])

    def kill_postmaster(self) -> int:
        """SIGKILL the postmaster; its pid."""
        pid = self.postmaster_pid()
        os.kill(pid, signal.SIGKILL)
        return pid

    async def start_again(self, killed: int | None = None, timeout: float = 90.0) -> None:
        """Start the cluster after a crash, once the killed postmaster (`killed`) is gone and
        its orphaned backends have let go of it."""
        deadline = time.monotonic() + timeout

        async def gone() -> bool:
            return killed is None or _process_gone(killed)

        if killed is not None:
            await wait_until(gone, f"the killed postmaster {killed} to go", timeout)
        while True:
            try:
                await asyncio.to_thread(self.server.start)
                conn = await self.admin()
                await conn.close()
                return
            except Exception:
                # Backends of a killed postmaster exit when they notice; until then the old
                # shared memory is in use and the new postmaster refuses to start.
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    async def reset(self) -> None:
        """Put the cluster back for the next case, whatever this one left (a case marked
        xfail leaves what its defect leaves): running, no pgwx session or schema, an empty
        postgresql.auto.conf."""
        if not await asyncio.to_thread(self.server.is_running):
            await self.start_again()
        conn = await self.admin()
        try:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE 'pgwx%' AND pid <> pg_backend_pid()"
            )
            for (name,) in await conn.fetch(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgwx_lab%'"
            ):
                await conn.execute(f'DROP SCHEMA "{name}" CASCADE')
            await conn.execute("ALTER SYSTEM RESET ALL")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()

    # ------------------------------------------------------------------ what must hold
    async def state(self) -> dict[str, Any]:
        """Settings, postgresql.auto.conf, pgwx's schemas and sessions (as the superuser)."""
        conn = await self.admin()
        try:
            settings, auto = await settings_and_auto_conf(conn)
            schemas = [
                r[0]
                for r in await conn.fetch(
                    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgwx_lab%'"
                )
            ]
        finally:
            await conn.close()
        return {"settings": settings, "auto_conf": auto, "schemas": schemas}

    async def pgwx_sessions(self) -> list[str]:
        """What pgwx's sessions on the server are doing (none should outlive a run)."""
        conn = await self.admin()
        try:
            rows = await conn.fetch(
                "SELECT application_name, state, left(query, 60) AS q FROM pg_stat_activity "
                "WHERE application_name LIKE 'pgwx%' AND pid <> pg_backend_pid()"
            )
        finally:
            await conn.close()
        return [f"{r['application_name']} {r['state']}: {r['q']}" for r in rows]

    async def assert_as_before(self, before: dict[str, Any], session_wait: float = 20.0) -> None:
        """Settings and auto.conf as `before`, no pgwx schema, and no pgwx session (waited for:
        a backend whose client has gone exits a moment later)."""
        after = await self.state()
        assert after["schemas"] == [], (
            f"pgwx schemas left: {after['schemas']}; sessions: {await self.pgwx_sessions()}"
        )
        assert after["auto_conf"] == before["auto_conf"], "postgresql.auto.conf not put back"
        changed = {
            k: (v, after["settings"].get(k))
            for k, v in before["settings"].items()
            if after["settings"].get(k) != v
        }
        assert not changed, f"settings not restored: {changed}"
        left: list[str] = []

        async def none_left() -> bool:
            nonlocal left
            left = await self.pgwx_sessions()
            return not left

        try:
            await wait_until(none_left, "pgwx sessions to end", session_wait)
        except AssertionError:
            raise AssertionError(f"pgwx sessions left on the server: {left}") from None


def _process_gone(pid: int) -> bool:
    """The process has exited (a zombie counts: it holds nothing any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


class Gate:
    """Holds the advisory lock the gate phase waits for; trials queue behind it."""

    def __init__(self, server: FaultServer) -> None:
        self.server = server
        self.conn: asyncpg.Connection | None = None

    async def close(self) -> None:
        """Let waiting trials through (quietly, also when the server went away)."""
        if self.conn is not None:
            self.conn.terminate()
            self.conn = None

    async def __aenter__(self) -> Gate:
        self.conn = await self.server.admin()
        await self.conn.execute(f"SELECT pg_advisory_lock({GATE_KEY})")
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def waiting(self) -> bool:
        """A pgwx session waits at the gate now."""
        conn = await self.server.admin()
        try:
            return bool(
                await conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgwx%' "
                    "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                )
            )
        finally:
            await conn.close()

    async def reached(self, timeout: float = 60.0) -> None:
        """Wait until a trial stands at the gate."""
        await wait_until(self.waiting, "a trial to reach the gate", timeout)


# --------------------------------------------------------------------------- a small disk


@contextlib.contextmanager
def small_tmpfs() -> Iterator[Path]:
    """A 96 MB tmpfs (root only; the test is skipped otherwise), unmounted afterwards."""

    import pytest

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="pgwx-full-", dir="/tmp"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96m,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


# --------------------------------------------------------------------------- the store


def integrity(path: Path) -> str:
    """SQLite's own verdict on the store file."""
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def stored_rows(path: Path, run_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """A run exactly as stored: its runs row, trials and events."""
    db = sqlite3.connect(path)
    try:
        return {
            table: db.execute(
                f"SELECT * FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ? "
                "ORDER BY 2",
                (run_id,),
            ).fetchall()
            for table in ("runs", "trials", "events")
        }
    finally:
        db.close()


def run_status(path: Path, run_id: str) -> tuple[str, str | None]:
    """(status, reason) as stored for a run (not as a reader would infer it)."""
    import json

    db = sqlite3.connect(path)
    try:
        row = db.execute("SELECT record FROM runs WHERE id = ?", (run_id,)).fetchone()
    finally:
        db.close()
    record = json.loads(row[0])
    return record["status"], record.get("reason")


def run_ids(path: Path) -> list[str]:
    """Every run in the store, oldest first."""
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT id FROM runs ORDER BY started_at, id")]
    finally:
        db.close()


# --------------------------------------------------------------------------- the child


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This checkout first on the path, a private store, journal and temp directory, no
    libpq variables."""
    from explorer.server.connect import LIBPQ_ENV

    (tmp_path / "tmp").mkdir(exist_ok=True)

    env = {k: v for k, v in os.environ.items() if k not in LIBPQ_ENV and k != "PGPASSWORD"}
    env.update(
        PYTHONPATH=str(ROOT),
        PGWX_RESULTS=str(tmp_path / "results.sqlite"),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        TMPDIR=str(tmp_path / "tmp"),
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


async def start_pgwx(tmp_path: Path, *args: str, **env: str) -> asyncio.subprocess.Process:
    """`pgwx ARGS` in a child (through this module, for the store-write fault point)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.faults",
        *args,
        env=child_env(tmp_path, **env),
        cwd=str(ROOT),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def read_until(
    child: asyncio.subprocess.Process, marker: str, seen: list[str], timeout: float = 90.0
) -> None:
    """Read the child's stderr into `seen` until a line contains `marker`."""
    assert child.stderr is not None
    async with asyncio.timeout(timeout):
        while True:
            line = (await child.stderr.readline()).decode()
            if not line:
                raise AssertionError(f"pgwx ended before {marker!r}:\n" + "".join(seen))
            seen.append(line)
            if marker in line:
                return


def signal_masks(pid: int) -> list[str]:
    """A process's signal masks from /proc (SigIgn shows an ignored SIGINT), or nothing."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return []
    return [line for line in status.read_text().splitlines() if line.startswith("Sig")]


async def finish(child: asyncio.subprocess.Process, timeout: float = 120.0) -> tuple[str, str]:
    """Wait for the child to end (killing it after `timeout`); its stdout and the rest of stderr."""
    try:
        out, err = await asyncio.wait_for(child.communicate(), timeout)
    except TimeoutError:
        # What the stuck child's signals were (an ignored SIGINT shows in SigIgn) and what it
        # said last: a hang must say where it hung.
        signals = signal_masks(child.pid)
        child.kill()
        await child.wait()
        said = b""
        if child.stderr is not None:
            with contextlib.suppress(Exception):
                said = await asyncio.wait_for(child.stderr.read(), 5)
        raise AssertionError(
            f"pgwx did not end within {timeout:.0f} s; {' '.join(signals)}; "
            f"stderr: {said.decode(errors='replace')[-2000:]}"
        ) from None
    return out.decode(), err.decode()


async def sigkill(child: asyncio.subprocess.Process) -> None:
    """SIGKILL the child (if it still runs) and reap it."""
    if child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGKILL)
    await asyncio.wait_for(child.wait(), 30)


def _pause_in_trial_writes(nth: int) -> None:
    """Make the `nth` add_trial stop inside its transaction until the process is killed."""
    from explorer.lab.store.results import ResultStore

    original = ResultStore.add_trial
    count = 0

    def add_trial(self: ResultStore, run_id: str, result: Any) -> None:
        nonlocal count
        count += 1
        if count != nth:
            original(self, run_id, result)
            return
        with self._write():
            self._flush_events()
            self.db.execute(
                "INSERT INTO trials VALUES (?, ?, ?)", (run_id, 10_000, result.model_dump_json())
            )
            print(PAUSED, file=sys.stderr, flush=True)
            time.sleep(600)  # killed here, inside the open write transaction

    ResultStore.add_trial = add_trial  # type: ignore[method-assign]


if __name__ == "__main__":
    # Ctrl-C reaches a foreground process at a terminal, which never ignores SIGINT. A test
    # run launched in the background by a shell without job control inherits SIGINT ignored
    # (and passes that on), and the Ctrl-C test then waited 60 s for a pgwx that could not hear
    # it: give this child the disposition a terminal's foreground process has.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if os.environ.get("PGWX_FAULT_PAUSE_IN_WRITE"):
        _pause_in_trial_writes(int(os.environ["PGWX_FAULT_PAUSE_IN_WRITE"]))
    from explorer.cli import main

    sys.exit(main(sys.argv[1:]))
