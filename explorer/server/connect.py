"""Where to connect, how to connect, and how to show it without leaking a password.

A `Target` is one server: the bundled one, or the user's (DSN and/or libpq environment —
PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGSERVICE, .pgpass; asyncpg reads them all).
Every connection carries an `application_name` so the sampler can find pgwx's own backends.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from explorer.errors import PgwxError
from explorer.server.embedded import LocalServer, bundled_bindir

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection before saying so."""

LIBPQ_ENV = ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE", "PGHOSTADDR")
"""libpq variables that name a server: any of them set means "the user's server"."""

APP_PREFIX = "pgwx"
"""application_name prefix of every pgwx connection."""


class ConnectError(PgwxError, RuntimeError):
    """A connection could not be made; str() is one sentence saying what to do."""


_KW_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)


def mask_dsn(dsn: str) -> str:
    """Replace the password in a URL or keyword/value connection string with ***.

    >>> mask_dsn("postgresql://bob:s3cret@db:5432/app")
    'postgresql://bob:***@db:5432/app'
    """
    text = _KW_PASSWORD.sub(r"\1***", dsn)
    text = _QUERY_PASSWORD.sub(r"\1***", text)
    if "://" in text:
        try:
            parts = urlsplit(text)
        except ValueError:
            return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", text)
        if "@" in parts.netloc:
            userinfo, _, hostinfo = parts.netloc.rpartition("@")
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            text = urlunsplit(parts._replace(netloc=f"{userinfo}@{hostinfo}"))
    return text


@dataclass
class Target:
    """One server pgwx talks to.

    Args:
        dsn: A libpq URL or keyword string; None means the environment alone.
        bundled: The LocalServer pgwx owns, when it is the bundled one.
    """

    dsn: str | None = None
    bundled: LocalServer | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    """Extra asyncpg.connect() keywords (host, port, user, database)."""

    @property
    def owned(self) -> bool:
        """pgwx started this server and may restart it."""
        return self.bundled is not None

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for asyncpg.connect()."""
        kwargs: dict[str, Any] = dict(self.bundled.connect_kwargs()) if self.bundled else {}
        if self.dsn:
            kwargs["dsn"] = self.dsn
        kwargs.update(self.overrides)
        return kwargs

    def label(self) -> str:
        """How the server is shown anywhere: never with a password."""
        if self.bundled is not None:
            return self.bundled.label()
        if self.dsn:
            return mask_dsn(self.dsn)
        env = os.environ
        if env.get("PGSERVICE"):
            return f"service={env['PGSERVICE']}"
        host = env.get("PGHOST", "local socket")
        port = env.get("PGPORT", "5432")
        user = env.get("PGUSER", "")
        db = env.get("PGDATABASE", "")
        return f"{user + '@' if user else ''}{host}:{port}{'/' + db if db else ''}"

    def tool_env(self) -> dict[str, str]:
        """Environment for pg_dump, pg_restore, pgbench and psql to reach this server.

        The password travels in PGPASSWORD of the child process only; it is never shown.
        """
        env = dict(os.environ)
        if self.bundled is not None:
            kw = self.bundled.connect_kwargs()
            env.update(
                PGHOST=str(kw["host"]),
                PGPORT=str(kw["port"]),
                PGUSER=str(kw["user"]),
                PGDATABASE=str(kw["database"]),
            )
        for key, var in (
            ("host", "PGHOST"),
            ("port", "PGPORT"),
            ("user", "PGUSER"),
            ("database", "PGDATABASE"),
            ("password", "PGPASSWORD"),
        ):
            if key in self.overrides:
                env[var] = str(self.overrides[key])
        return env

    def tool(self, name: str, server_major: int | None = None) -> str:
        """Path of pg_dump, pg_restore, pgbench or psql to use against this server.

        The server's own installation when pgwx owns it. Otherwise the tools of the server's
        major version when they are installed the Debian way (/usr/lib/postgresql/N/bin): a
        newer pg_restore sends settings an older server rejects (pg_restore 18 sends
        `SET transaction_timeout`, unknown before 17). Else the bundled PostgreSQL 18.
        """
        if self.bundled is not None:
            return str(self.bundled.tool(name))
        if server_major is not None:
            own = f"/usr/lib/postgresql/{server_major}/bin/{name}"
            if os.access(own, os.X_OK):
                return own
        return str(bundled_bindir() / name)

    def tool_conn_args(self) -> list[str]:
        """Arguments that name the database for libpq tools (`-d DSN` when there is one)."""
        return ["-d", self.dsn] if self.dsn else []

    async def connect(
        self,
        purpose: str,
        *,
        statement_timeout_ms: int | None = None,
        timeout: float = CONNECT_TIMEOUT,
    ) -> asyncpg.Connection:
        """Open one connection tagged `pgwx-<purpose>`; errors become one sentence."""
        settings = {"application_name": f"{APP_PREFIX}-{purpose}"}
        if statement_timeout_ms is not None:
            settings["statement_timeout"] = str(statement_timeout_ms)
        try:
            return await asyncpg.connect(
                **self.connect_kwargs(), timeout=timeout, server_settings=settings
            )
        except Exception as exc:
            raise ConnectError(explain_connect_error(exc, self.label())) from None


def explain_connect_error(exc: BaseException, where: str) -> str:
    """One sentence for a failed connection: what went wrong and what to do."""
    text = mask_dsn(str(exc)).strip().rstrip(".")
    if isinstance(exc, asyncpg.InvalidPasswordError):
        return (
            f"Password authentication failed for {where}; check the password in the DSN, "
            "PGPASSWORD or ~/.pgpass."
        )
    if isinstance(exc, asyncpg.InvalidAuthorizationSpecificationError):
        return (
            f"The server at {where} refused this user ({text}); check the user name and "
            "pg_hba.conf."
        )
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return (
            f"The database does not exist on {where} ({text}); name an existing one with "
            "--dsn or PGDATABASE."
        )
    if isinstance(exc, TimeoutError):
        return (
            f"No answer from {where} within {CONNECT_TIMEOUT:.0f} s; check the host, port "
            "and firewall."
        )
    if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
        return (
            f"Nothing is listening at {where}; is the server running, and are the host and "
            "port right?"
        )
    if isinstance(exc, OSError):
        return f"Could not reach {where} ({text}); check the host name and network."
    if isinstance(exc, ValueError | TypeError):
        return (
            f"The connection string is not valid ({text}); use postgresql://user@host/db "
            "or key=value pairs."
        )
    return f"Could not connect to {where}: {text}."
