"""The bundled server, connections and capability probes, on real PG 18 and PG 15."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from explorer.server.capabilities import probe
from explorer.server.connect import ConnectError, Target, mask_dsn
from explorer.server.embedded import LocalServer


@pytest.mark.parametrize(
    ("dsn", "masked"),
    [
        ("postgresql://bob:s3cret@db:5432/app", "postgresql://bob:***@db:5432/app"),
        (
            "postgres://bob:p%40ss@db/app?sslmode=require",
            "postgres://bob:***@db/app?sslmode=require",
        ),
        (
            "postgresql://db/app?user=bob&password=s3cret",
            "postgresql://db/app?user=bob&password=***",
        ),
        ("host=db user=bob password=s3cret dbname=app", "host=db user=bob password=*** dbname=app"),
        ("host=db password='it\\'s secret' dbname=app", "host=db password=*** dbname=app"),
        ("postgresql://bob@db/app", "postgresql://bob@db/app"),
    ],
)
def test_mask_dsn_hides_every_password_form(dsn: str, masked: str) -> None:
    assert mask_dsn(dsn) == masked
    assert "s3cret" not in mask_dsn(dsn)


def test_label_never_shows_password() -> None:
    target = Target(dsn="postgresql://bob:hunter2@db.example:6543/app")
    assert "hunter2" not in target.label()
    assert "db.example:6543" in target.label()


async def test_bundled_server_is_socket_only_and_not_run_as_root(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        assert await conn.fetchval("SHOW listen_addresses") == ""
        assert await conn.fetchval("SHOW unix_socket_permissions") == "0700"
    finally:
        await conn.close()
    assert pg18.bundled is not None
    postmaster = (pg18.bundled.data_dir / "postmaster.pid").read_text().split()[0]
    uid = os.stat(f"/proc/{postmaster}").st_uid
    assert uid != 0, "PostgreSQL must not run as root"
    if os.geteuid() != 0:
        assert uid == os.geteuid()


async def test_capabilities_pg18(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    assert caps.major == 18
    assert caps.lz4 is False  # no PyPI PostgreSQL is built --with-lz4
    assert caps.pg_stat_io == "split_bytes"
    assert caps.pg_stat_checkpointer and caps.superuser and caps.alter_system
    assert caps.gucs["wal_level"].context == "postmaster"
    assert caps.gucs["fsync"].context == "sighup"
    assert caps.gucs["synchronous_commit"].context == "user"
    assert caps.system_identifier.isdigit()


async def test_capabilities_pg15(pg15: Target) -> None:
    conn = await pg15.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    assert caps.major == 15
    assert caps.lz4 is True
    assert caps.pg_stat_io == "none"
    assert caps.pg_stat_checkpointer is False


async def test_capabilities_of_unprivileged_user(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        await conn.execute("DROP ROLE IF EXISTS pgwx_plain")
        await conn.execute("CREATE ROLE pgwx_plain LOGIN")
        plain = Target(overrides={**pg18.connect_kwargs(), "user": "pgwx_plain"})
        other = await plain.connect("test")
        try:
            caps = await probe(other, owned=False)
        finally:
            await other.close()
    finally:
        await conn.execute("DROP ROLE pgwx_plain")
        await conn.close()
    assert not caps.superuser and not caps.alter_system and not caps.pg_monitor


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"host": "/nonexistent-dir", "port": 5432}, "Nothing is listening"),
        ({"database": "no_such_db"}, "database does not exist"),
        ({"user": "no_such_user"}, "refused this user"),
    ],
)
async def test_connect_errors_are_one_sentence(pg18: Target, overrides: dict, words: str) -> None:
    target = Target(overrides={**pg18.connect_kwargs(), **overrides})
    with pytest.raises(ConnectError) as err:
        await target.connect("test", timeout=3)
    text = str(err.value)
    assert words in text
    assert "\n" not in text and "Traceback" not in text


def test_restart_and_reuse_of_running_server(pg18_server: LocalServer) -> None:
    again = LocalServer(pg18_server.data_dir)
    assert again.is_running()
    again.start()  # reuses, does not fail or start a second postmaster
    assert again.started_here is False
    pg18_server.restart()
    assert pg18_server.is_running()


def test_engine_never_imports_textual() -> None:
    code = (
        "import sys, explorer.lab.run.runner, explorer.analysis.report, explorer.cli, "
        "explorer.server.connect, explorer.server.capabilities\n"
        "import explorer.lab.workloads as w\n"
        "[w.workload_class(k) for k in w.KINDS]\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')]\n"
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
