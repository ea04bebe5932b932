"""Connection strings as libpq means them, and passwords that never leave pgwx's own memory."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from explorer.server.connect import ConnectError, Target, explain_connect_error, mask_dsn

# ------------------------------------------------------------------------------ masking


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        (
            "could not connect to postgresql://bob:s3cret@db/app: refused",
            "s3cret",
            "could not connect to postgresql://bob:***@db/app: refused",
        ),
        (
            "runner failed: postgres://bob:p%40ss%3Aw%2Frd@db:5432/app?sslmode=require (retry)",
            "p%40ss%3Aw%2Frd",
            "runner failed: postgres://bob:***@db:5432/app?sslmode=require (retry)",
        ),
        (
            "cannot reach postgresql://db/app?user=bob&password=s3cret&sslmode=require now",
            "s3cret",
            "cannot reach postgresql://db/app?user=bob&password=***&sslmode=require now",
        ),
        (
            "bad: host=db user=bob password='a b@c:d/e\\'f' dbname=app, giving up",
            "a b@c:d/e",
            "bad: host=db user=bob password=*** dbname=app, giving up",
        ),
        (
            "bad: host=db password = s3cret dbname=app",
            "s3cret",
            "bad: host=db password = *** dbname=app",
        ),
        (
            "from postgresql://a:s3cret@h1/x to postgresql://b:0ther@h2/y failed",
            "0ther",
            "from postgresql://a:***@h1/x to postgresql://b:***@h2/y failed",
        ),
        (
            "raw @ in postgresql://bob:p@ss@db/app is wrong",
            "ss",
            "raw @ in postgresql://bob:***@db/app is wrong",
        ),
        ("no secret in postgresql://bob@db/app", None, "no secret in postgresql://bob@db/app"),
    ],
)
def test_mask_dsn_finds_passwords_anywhere_in_a_sentence(
    text: str, secret: str | None, kept: str
) -> None:
    masked = mask_dsn(text)
    assert masked == kept
    if secret:
        assert secret not in masked
        assert "s3cret" not in masked


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://bob:s3cret@db.example:6543/app",
        "postgresql://bob@db.example:6543/app?password=s3cret",
        "host=db.example port=6543 user=bob password='s3cret' dbname=app",
        "postgresql://bob:s3cret@db.example:port/app",  # unparseable: still never shown
        "host=db.example password=s3cret dbname",  # unparseable keyword string
    ],
)
def test_label_and_repr_never_show_the_password(dsn: str) -> None:
    target = Target(dsn=dsn)
    assert "s3cret" not in target.label()
    assert "s3cret" not in repr(target)
    if target.invalid is None:
        assert "db.example" in target.label()
    else:  # a string that cannot be parsed is never shown, not even its host (issue 19)
        assert "db.example" not in target.label() + repr(target)


# ------------------------------------------------------------------------------ child argv


@pytest.mark.parametrize(
    ("dsn", "password"),
    [
        ("postgresql://bob:s3cret@db/app?sslmode=require", "s3cret"),
        ("postgresql://bob:p%40ss%3A%2F@db/app", "p@ss:/"),
        ("postgresql://bob@db/app?password=s3cret&sslmode=require", "s3cret"),
        ("host=db user=bob password='it\\'s a s3cret' dbname=app", "it's a s3cret"),
        ("host=db user=bob password=s3cret dbname=app", "s3cret"),
    ],
)
def test_tool_args_carry_no_password_and_tool_env_does(dsn: str, password: str) -> None:
    target = Target(dsn=dsn)
    args = target.tool_conn_args()
    assert args[0] == "-d"
    assert "s3cret" not in " ".join(args) and "p%40ss" not in " ".join(args)
    assert "password" not in args[1]
    assert "db" in args[1] and "app" in args[1]
    assert target.tool_env()["PGPASSWORD"] == password
    assert target.connect_kwargs()["password"] == password


def test_tool_args_refuse_an_unparseable_dsn_without_quoting_it() -> None:
    target = Target(dsn="postgresql://bob:s3/cret@db/app")
    with pytest.raises(ConnectError) as err:
        target.tool_conn_args()
    assert "s3" not in str(err.value) and "cret" not in str(err.value)


# ------------------------------------------------------------------------------ keyword form


def test_keyword_strings_parse_as_libpq_parses_them() -> None:
    target = Target(dsn="host='/tmp/a b' port = 5433 user=me dbname=it\\'s options='-c a=b\\\\ c'")
    kwargs = target.connect_kwargs()
    assert kwargs["host"] == "/tmp/a b"
    assert kwargs["port"] == 5433
    assert kwargs["user"] == "me"
    assert kwargs["database"] == "it's"
    assert kwargs["server_settings"] == {"a": "b c"}


@pytest.mark.parametrize(
    ("dsn", "why"),
    [
        # the reason names where, never what: any part of a bad string may be a password
        ("host=db dbname", 'the second word has no "="'),
        ("host='db dbname=app", "no closing quote"),
        ("host=db colour=blue", "the second keyword is not one libpq knows"),
        ("postgresql://db/app?colour=blue", "the first query parameter of the URI is not"),
    ],
)
async def test_malformed_strings_get_one_sentence(dsn: str, why: str) -> None:
    with pytest.raises(ConnectError) as err:
        await Target(dsn=dsn).connect("test")
    assert why in str(err.value)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------ libpq options


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback TCP port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


async def test_pgconnecttimeout_bounds_the_wait_and_the_message_says_so(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    target = Target(dsn=f"postgresql://nobody@127.0.0.1:{silent_port}/app")
    start = time.monotonic()
    with pytest.raises(ConnectError) as err:
        await asyncio.wait_for(target.connect("test"), 30)
    elapsed = time.monotonic() - start
    assert 1.5 <= elapsed < 5, elapsed
    assert "within 2 s" in str(err.value)


def test_timeout_message_reports_the_timeout_used() -> None:
    assert "within 3 s" in explain_connect_error(TimeoutError(), "db", 3.0)
    assert "within 2.5 s" in explain_connect_error(TimeoutError(), "db", 2.5)
