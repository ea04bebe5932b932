"""One sentence for the user's errors, passwords masked; a bug gets its traceback logged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from explorer.errors import UsageError
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.closing import stop_sampler
from explorer.lab.run.runner import Runner
from explorer.lab.store.results import ResultStore
from explorer.server.connect import ConnectError, Target
from explorer.server.failures import failure_reason, is_user_facing, one_sentence


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.mark.parametrize(
    "exc",
    [
        ConnectError("cannot reach postgresql://bob:s3cret@db/app\nsecond line"),
        OSError("host=db user=bob password=s3cret: refused"),
        UsageError("--dsn postgres://bob:s3cret@db?sslmode=require is wrong"),
    ],
    ids=["url", "keyword", "usage"],
)
def test_one_sentence_masks_the_password_and_keeps_one_line(exc: Exception) -> None:
    sentence = one_sentence(exc)
    assert "s3cret" not in sentence and "***" in sentence
    assert "\n" not in sentence and "second line" not in sentence
    assert failure_reason(exc) == sentence, "a user error is only its sentence"


def test_postgres_errors_say_who_said_it_with_the_detail() -> None:
    exc = asyncpg.UniqueViolationError("duplicate key value")
    exc.detail = "Key (id)=(1) already exists."  # type: ignore[attr-defined]
    assert one_sentence(exc) == (
        "PostgreSQL said: duplicate key value (Key (id)=(1) already exists.)"
    )


def test_an_empty_message_is_the_error_s_name() -> None:
    assert one_sentence(TimeoutError()) == "TimeoutError"


@pytest.mark.parametrize(
    "exc", [KeyError("k"), RecursionError(), NotImplementedError(), TypeError(), RuntimeError()]
)
def test_programming_errors_are_not_the_user_s(exc: Exception) -> None:
    assert not is_user_facing(exc)


def failing_lookup(password: str) -> None:
    """A bug whose message carries a DSN."""
    raise KeyError(f"postgresql://bob:{password}@db/app")


def test_a_bug_is_logged_once_with_its_traceback_and_no_password(state: Path) -> None:
    try:
        failing_lookup("s3" + "cret")  # not spelled out: the traceback quotes this line
    except KeyError as exc:
        reason = failure_reason(exc)
        again = failure_reason(exc)
    log = state / "pgwx.log"
    assert reason == again == f"internal error (see {log})"
    text = log.read_text()
    assert "Traceback" in text and "failing_lookup" in text and "KeyError" in text
    assert "s3cret" not in text, "the log is masked too"
    assert text.count("Traceback") == 1


def test_an_unwritable_log_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PGWX_STATE_DIR", str(blocker / "state"))
    assert failure_reason(ValueError("x")) == "internal error (its traceback could not be logged)"


async def test_a_sampler_that_died_of_a_bug_is_said_at_wind_down(
    state: Path, tmp_path: Path
) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    ctx = Runner(Target(), load_profile("quick-demo"), store).ctx
    said: list[tuple[str, str]] = []
    ctx.notice = lambda message, level="info": said.append((level, message))  # type: ignore[method-assign]

    async def sampler_with_a_bug() -> None:
        raise NotImplementedError("pg_stat_io on this version")

    task = asyncio.create_task(sampler_with_a_bug())
    await asyncio.sleep(0)
    await stop_sampler(ctx, task)
    store.close()
    assert said == [
        ("error", f"the statistics sampler failed: internal error (see {state / 'pgwx.log'})")
    ]
    assert "sampler_with_a_bug" in (state / "pgwx.log").read_text()
