"""Bad input, the way a user meets it: `python -m explorer.cli` in a subprocess.

Each case must end with one sentence on stderr (what went wrong, what to do), a non-zero
exit, no traceback, no password anywhere, no run stored and no scratch directory left.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from tests.support.cli import SECRET, assert_one_sentence

PW_ROLE = "pgwx_pw_user"
"""A role that must authenticate with a password (pg_hba rule added by the fixture)."""


def _sock(target: Target) -> tuple[str, int]:
    assert target.bundled is not None
    kw = target.bundled.connect_kwargs()
    return str(kw["host"]), int(kw["port"])  # type: ignore[call-overload]


# --------------------------------------------------------------------------- profiles, sizes


PROFILES = {
    "syntax": ('title = "x"\nworkload = \n', ["not valid TOML"]),
    "unknown-field": (
        'title = "x"\nworkload = "toast"\ncolour = "red"\n[[variants]]\nname = "a"\n',
        ["colour"],
    ),
    "wrong-type": (
        'title = "x"\nworkload = "toast"\nrepeats = "many"\n[[variants]]\nname = "a"\n',
        ["repeats"],
    ),
    "unknown-workload": (
        'title = "x"\nworkload = "teleport"\n[[variants]]\nname = "a"\n',
        ["unknown kind 'teleport'"],
    ),
}


@pytest.mark.parametrize("case", sorted(PROFILES))
def test_broken_profile_file(case: str, cli: Callable[..., Any], tmp_path: Path) -> None:
    text, words = PROFILES[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    proc = cli("run", str(path))
    assert_one_sentence(proc, tmp_path, str(path), *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--scale", "0"], ["--scale", "greater than 0"]),
        (["--scale", "-2"], ["--scale", "greater than 0"]),
        (["--scale", "nan"], ["--scale", "finite"]),
        (["--scale", "inf"], ["--scale", "finite"]),
        (["--scale", "1e300"], ["--scale", "--allow-large", "10^"]),
        (["--scale", "1e308"], ["--scale", "too large"]),
        (["--scale", "100"], ["100,000,000 rows", "--allow-large"]),
        (["--repeats", "0"], ["--repeats", "between 1 and 100"]),
        (["--repeats", "-3"], ["--repeats", "between 1 and 100"]),
        (["--repeats", "1000000"], ["--repeats", "between 1 and 100"]),
        (["--settle", "-5"], ["--settle", "between 0 and 60"]),
        (["--variant", "bogus"], ["no variant bogus"]),
    ],
)
def test_bad_sizes_and_variants_are_refused_before_any_server_work(
    args: list[str], words: list[str], cli: Callable[..., Any], tmp_path: Path
) -> None:
    # A DSN nothing listens on: if a check came after connecting, the error would say so.
    dsn = f"postgresql://u:{SECRET}@/db?host={tmp_path}/nosock"
    proc = cli("run", "durability", "--dsn", dsn, *args)
    assert_one_sentence(proc, tmp_path, *words)
    assert "Nothing is listening" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "no-such-profile"], ["No profile 'no-such-profile'"]),
        (["report", "no-such-run"], ["No run matches"]),
        (["replay", "no-such-run", "--headless"], ["No run matches"]),
    ],
)
def test_unknown_names(
    args: list[str], words: list[str], cli: Callable[..., Any], tmp_path: Path
) -> None:
    assert_one_sentence(cli(*args), tmp_path, *words)


# --------------------------------------------------------------------------- connections


def test_malformed_dsn(cli: Callable[..., Any], tmp_path: Path) -> None:
    proc = cli("run", "quick-demo", "--dsn", f"postgresql://u:{SECRET}@host:notaport/db")
    assert_one_sentence(proc, tmp_path, "connection string is not valid")


def test_refused_port(cli: Callable[..., Any], tmp_path: Path) -> None:
    with socket.socket() as s:  # a free port: bound, then released, so nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli("run", "quick-demo", "--dsn", f"postgresql://u:{SECRET}@127.0.0.1:{port}/db")
    assert_one_sentence(proc, tmp_path, "Nothing is listening", f"127.0.0.1:{port}")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose kernel accepts connections that nobody ever answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


def test_unreachable_host_times_out_as_configured(
    cli: Callable[..., Any], tmp_path: Path, silent_port: int
) -> None:
    start = time.monotonic()
    proc = cli(
        "run",
        "quick-demo",
        "--dsn",
        f"postgresql://u:{SECRET}@127.0.0.1:{silent_port}/db",
        env={"PGCONNECT_TIMEOUT": "2"},
    )
    elapsed = time.monotonic() - start
    assert_one_sentence(proc, tmp_path, "No answer", "within 2 s", "PGCONNECT_TIMEOUT")
    # The wait is the user's 2 s, not the default 10 s (generous bound: the machine is busy).
    assert elapsed < 9, elapsed


def test_unknown_database(cli: Callable[..., Any], tmp_path: Path, pg18: Target) -> None:
    host, port = _sock(pg18)
    proc = cli(
        "run", "quick-demo", "--dsn", f"postgresql://pgwx@/no_such_db?host={host}&port={port}"
    )
    assert_one_sentence(proc, tmp_path, "database does not exist")


@pytest.fixture
def password_role(pg18: Target) -> Iterator[tuple[str, int]]:
    """A role on the PG 18 test server that must log in with a password (scram)."""
    assert pg18.bundled is not None
    hba = pg18.bundled.data_dir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text(f"local all {PW_ROLE} scram-sha-256\n{original}")

    async def sql(*statements: str) -> None:
        conn = await pg18.connect("test")
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(
        sql(
            f"DROP ROLE IF EXISTS {PW_ROLE}",
            f"CREATE ROLE {PW_ROLE} LOGIN PASSWORD 'right-password'",
            "SELECT pg_reload_conf()",
        )
    )
    try:
        yield _sock(pg18)
    finally:
        hba.write_text(original)
        with contextlib.suppress(Exception):
            asyncio.run(sql(f"DROP ROLE IF EXISTS {PW_ROLE}", "SELECT pg_reload_conf()"))


def test_wrong_password(
    cli: Callable[..., Any], tmp_path: Path, password_role: tuple[str, int]
) -> None:
    host, port = password_role
    dsn = f"postgresql://{PW_ROLE}:{SECRET}@/postgres?host={host}&port={port}"
    proc = cli("run", "quick-demo", "--dsn", dsn)
    assert_one_sentence(proc, tmp_path, "Password authentication failed")


# --------------------------------------------------------------------------- the app


async def test_app_with_a_bad_dsn_shows_the_failure_and_keeps_running(tmp_path: Path) -> None:
    from explorer.tui.app import PgwxApp

    store = ResultStore(tmp_path / "r.sqlite")
    app = PgwxApp(dsn=f"postgresql://u:{SECRET}@/db?host={tmp_path}/nosock", store=store)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            log = app.lab.query_one("#log")
            for _ in range(200):
                await pilot.pause(0.05)
                if "Nothing is listening" in _text(log):
                    break
            text = _text(log)
            assert "Nothing is listening" in text, text
            assert SECRET not in text
            assert app.is_running
    finally:
        store.close()


def _text(widget: object) -> str:
    lines = getattr(widget, "lines", [])
    return "\n".join(getattr(line, "text", str(line)) for line in lines)


def test_profile_that_is_not_utf8(cli: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('title = "Größe"\nworkload = "toast"\n'.encode("latin-1"))
    proc = cli("run", str(path))
    assert_one_sentence(proc, tmp_path, str(path), "not UTF-8")
