"""Connecting to the bundled PG 18 as libpq would, and passwords that never reach a child's
command line (the serverless half is tests/unit/test_connect.py)."""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.models import FkTiming, Knobs, Variant
from explorer.server.connect import ConnectError, Target
from tests.support.runs import RunProfile, small_profile


class CmdlineWatch:
    """Scans every process's /proc/PID/cmdline in a thread, looking for a secret."""

    def __init__(self, secret: str, tools: tuple[str, ...]) -> None:
        self.secret = secret.encode()
        self.tools = tools
        self.hits: list[str] = []
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._scan, daemon=True)

    def _scan(self) -> None:
        while not self._stop.is_set():
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                argv0 = cmdline.split(b"\0", 1)[0].decode(errors="replace")
                for tool in self.tools:
                    if argv0.endswith("/" + tool):
                        self.seen.add(tool)
                if self.secret in cmdline:
                    self.hits.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
            time.sleep(0.002)

    def __enter__(self) -> CmdlineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def test_children_never_get_the_password_on_their_command_line(
    pg18: Target, run_profile: RunProfile
) -> None:
    password = "Pw" + secrets.token_hex(8)
    kw = pg18.connect_kwargs()
    dsn = (
        f"postgresql://{kw['user']}:{password}@/{kw['database']}"
        f"?host={quote(str(kw['host']), safe='')}&port={kw['port']}"
    )
    target = Target(dsn=dsn)  # not owned: the tools find the server from the DSN
    restore = small_profile(
        "restore", [Variant(name="fk", knobs=Knobs(fk=FkTiming.IMMEDIATE))], rows=20_000
    )
    pgbench = load_profile("file-extension").model_copy(
        update={"params": {"rows": 1000, "clients": [2], "transactions": 1500}}
    )
    with CmdlineWatch(password, ("pg_dump", "pg_restore", "pgbench")) as watch:
        record, _ = await run_profile(target, restore, repeats=1)
        assert record.status == "finished", [t.reason for t in record.trials]
        record, _ = await run_profile(target, pgbench, repeats=1, variants=["pre-grown"])
        assert record.status == "finished", [t.reason for t in record.trials]
    assert all(t.status == "ok" for t in record.trials), [t.reason for t in record.trials]
    assert {"pg_restore", "pgbench"} <= watch.seen, "the scan never saw the tools run"
    assert not watch.hits, f"password on a command line: {watch.hits[0]}"


async def test_keyword_dsn_connects_to_the_bundled_server(pg18: Target) -> None:
    kw = pg18.connect_kwargs()
    target = Target(
        dsn=f"host='{kw['host']}' port={kw['port']} user={kw['user']} dbname = {kw['database']}"
    )
    conn = await target.connect("test")
    try:
        assert await conn.fetchval("SELECT current_database()") == kw["database"]
        assert await conn.fetchval("SHOW application_name") == "pgwx-test"
    finally:
        await conn.close()


async def test_url_connect_timeout_is_a_timeout_not_a_setting(pg18: Target) -> None:
    kw = pg18.connect_kwargs()
    target = Target(
        dsn=f"postgresql://{kw['user']}@/{kw['database']}?host={kw['host']}&port={kw['port']}"
        "&connect_timeout=7&options=-c%20work_mem%3D3MB"
    )
    conn = await target.connect("test")
    try:
        assert await conn.fetchval("SHOW work_mem") == "3MB"
    finally:
        await conn.close()
    assert target.connect_timeout() == 7.0


def _write_service(path: Path, pg18: Target, name: str = "lab") -> None:
    kw = pg18.connect_kwargs()
    path.write_text(
        "# a libpq service file\n"
        f"[{name}]\nhost={kw['host']}\nport={kw['port']}\nuser={kw['user']}\n"
        "dbname=template1\nconnect_timeout=4\n"
    )


@pytest.mark.parametrize("where", ["PGSERVICEFILE", "PGSYSCONFDIR", "HOME"])
async def test_pgservice_is_read_from_the_service_file(
    pg18: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    files = {
        "PGSERVICEFILE": tmp_path / "services.conf",
        "PGSYSCONFDIR": tmp_path / "pg_service.conf",
        "HOME": tmp_path / ".pg_service.conf",
    }
    _write_service(files[where], pg18)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("PGSERVICEFILE", str(tmp_path / "missing.conf"))
    monkeypatch.setenv("PGSYSCONFDIR", str(tmp_path / "nosys"))
    monkeypatch.setenv("PGSERVICE", "lab")
    monkeypatch.setenv("PGHOST", str(tmp_path / "no-server-here"))  # the service wins over PGHOST
    if where == "HOME":
        monkeypatch.delenv("PGSERVICEFILE")
        monkeypatch.setenv("HOME", str(tmp_path))
    else:
        monkeypatch.setenv(where, str(files[where] if where == "PGSERVICEFILE" else tmp_path))
    target = Target()
    conn = await target.connect("test")
    try:
        assert await conn.fetchval("SELECT current_database()") == "template1"
    finally:
        await conn.close()
    assert target.connect_timeout() == 4.0
    assert target.tool_env()["PGSERVICEFILE"] == str(files[where])


async def test_service_in_the_dsn_and_a_missing_service(
    pg18: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_service(tmp_path / "services.conf", pg18)
    monkeypatch.setenv("PGSERVICEFILE", str(tmp_path / "services.conf"))
    monkeypatch.setenv("PGSYSCONFDIR", str(tmp_path / "nosys"))
    conn = await Target(dsn="service=lab dbname=postgres").connect("test")
    try:  # the string's own keywords win over the service file's
        assert await conn.fetchval("SELECT current_database()") == "postgres"
    finally:
        await conn.close()
    with pytest.raises(ConnectError, match='definition of service "nope" not found'):
        await Target(dsn="service=nope").connect("test")
