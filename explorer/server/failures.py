"""What a failure is called on screen: one masked sentence, or an internal error with a log.

A failure is either the user's to act on — pgwx's own `PgwxError` family, what PostgreSQL
or the driver said, the machine's own trouble (`OSError`: a full disk, a refused socket, a
timeout) — or a programming error (`TypeError`, `KeyError`, `RecursionError`,
`NotImplementedError`, …). The first kind is shown as one sentence with every password
masked. The second keeps its traceback: it is written to the log file
(`explorer.paths.log_path`) and shown as "internal error (see <log>)", never dressed as
advice. Both front ends and the engine go through this one module.
"""

from __future__ import annotations

import logging
from pathlib import Path

import asyncpg

from explorer import paths
from explorer.errors import PgwxError
from explorer.files import open_private_log
from explorer.server.conninfo import mask_secrets

USER_FACING: tuple[type[BaseException], ...] = (
    PgwxError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,  # a lost connection may surface as one
    OSError,  # the machine's: disk, sockets, timeouts (TimeoutError is an OSError)
)
"""Errors the user can act on; anything else is a programming error."""

log = logging.getLogger("explorer")

LOGGED_AT = "_pgwx_logged_at"
"""Attribute set on a programming error once it is in the log (to the log's path, or None),
so it is written once however many layers report it on its way up."""


class _MaskingFormatter(logging.Formatter):
    """The log record, traceback included, with every password masked."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_secrets(super().format(record))


def is_user_facing(exc: BaseException) -> bool:
    """Whether `exc` is the user's to act on (a sentence is enough) rather than a bug."""
    return isinstance(exc, USER_FACING)


def one_sentence(exc: BaseException) -> str:
    """A failure as one line without a traceback and without a password."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if isinstance(exc, asyncpg.PostgresError):
        # str() puts the DETAIL on a line of its own: bring it onto the one line shown.
        detail = (getattr(exc, "detail", None) or "").strip().splitlines()
        text = f"PostgreSQL said: {text}" + (f" ({detail[0]})" if detail else "")
    return mask_secrets(text)


def log_traceback(exc: BaseException) -> Path | None:
    """Write `exc` with its traceback to the log file, once; the file, or None if unwritable."""
    if hasattr(exc, LOGGED_AT):
        logged: Path | None = getattr(exc, LOGGED_AT)
        return logged
    path: Path | None = None
    try:
        wanted = paths.log_path()
        stream = open_private_log(wanted)  # 0600 in a 0700 directory, never through a link
    except (OSError, PgwxError):
        pass
    else:
        path = wanted
        handler = logging.StreamHandler(stream)
        handler.setFormatter(_MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        try:
            log.error("programming error: %s", exc, exc_info=exc)
        finally:
            log.removeHandler(handler)
            handler.close()
            stream.close()
    setattr(exc, LOGGED_AT, path)
    return path


def internal_reason(exc: BaseException) -> str:
    """'internal error (see <log>)' for a programming error, its traceback logged first."""
    path = log_traceback(exc)
    where = f"see {path}" if path is not None else "its traceback could not be logged"
    return f"internal error ({where})"


def failure_reason(exc: BaseException) -> str:
    """What to store and show for a failure: its sentence, or the internal-error line."""
    return one_sentence(exc) if is_user_facing(exc) else internal_reason(exc)
