"""Where to connect, how to connect, and how to show it without leaking a password.

A `Target` is one server: the bundled one, or the user's (a URI or keyword/value DSN and/or
the libpq environment — PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, .pgpass, which asyncpg
reads; PGSERVICE, PGCONNECT_TIMEOUT and connect_timeout, which explorer.server.conninfo reads).
Every connection carries an `application_name` so the sampler can find pgwx's own backends.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from explorer.errors import PgwxError
from explorer.server import conninfo
from explorer.server.conninfo import mask_secrets
from explorer.server.embedded import LocalServer, bundled_bindir

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection before saying so."""

LIBPQ_ENV = ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE", "PGHOSTADDR")
"""libpq variables that name a server: any of them set means "the user's server"."""

APP_PREFIX = "pgwx"
"""application_name prefix of every pgwx connection."""


class ConnectError(PgwxError, RuntimeError):
    """A connection could not be made; str() is one sentence saying what to do."""


DRIVER_ERRORS: tuple[type[Exception], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,  # a bad option in the DSN too (ClientConfigurationError)
    asyncpg.InternalClientError,  # target_session_attrs not met; not PostgreSQL answering
    OSError,  # refused, unreachable, timed out, TLS
    ValueError,  # a DSN asyncpg cannot parse
)
"""What connecting can raise that is the server's or the user's doing: said as one sentence
(`explain_connect_error`). Anything else is a bug in pgwx and reaches the front end as one."""


INVALID_DSN = "(the connection string given, which is not valid)"
"""What stands for a DSN that cannot be parsed, wherever it would be shown."""

mask_dsn = mask_secrets
"""The one masking function under its older name: every password in a sentence becomes ***."""


@dataclass
class Target:
    """One server pgwx talks to.

    A password in `dsn` is moved to `password` when the Target is made, so `dsn` (and
    `repr()`) can be handed to anything, including a child's command line.

    Args:
        dsn: A libpq URI or keyword/value string; None means the environment alone.
        bundled: The LocalServer pgwx owns, when it is the bundled one.
    """

    dsn: str | None = None
    bundled: LocalServer | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    """Extra asyncpg.connect() keywords (host, port, user, database)."""
    password: str | None = field(default=None, repr=False, compare=False)
    """The password the DSN carried; reaches asyncpg and a child's PGPASSWORD, nothing else."""

    invalid: str | None = field(default=None, init=False, repr=False, compare=False)
    """Why the DSN cannot be parsed, in words that quote none of it; the DSN itself is then
    dropped (`dsn` becomes INVALID_DSN): any part of it may be a password."""

    def __post_init__(self) -> None:
        if not self.dsn:
            return
        try:
            stripped, secret = conninfo.strip_password(self.dsn)
        except ValueError as exc:
            # connect() refuses it with this reason (conninfo's words, never the string's)
            self.invalid = str(exc)
            self.dsn = INVALID_DSN
            return
        self.dsn = stripped
        if secret is not None:
            self.password = secret

    @property
    def owned(self) -> bool:
        """pgwx started this server and may restart it."""
        return self.bundled is not None

    def _external(self) -> bool:
        """A DSN or PGSERVICE names the server (never for the bundled one)."""
        return self.bundled is None and bool(self.dsn or os.environ.get("PGSERVICE"))

    def _resolved(self) -> tuple[dict[str, str], Path | None]:
        """libpq keywords of the DSN and service; ConnectError when they cannot be read."""
        if self.invalid is not None:
            raise ConnectError(_bad_dsn(ValueError(self.invalid)))
        try:
            params, path = conninfo.resolve(self.dsn, os.environ)
        except ValueError as exc:
            raise ConnectError(_bad_dsn(exc)) from None
        if self.password is not None:
            params["password"] = self.password
        return params, path

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for asyncpg.connect() (the timeout is `connect_timeout()`).

        Raises:
            ConnectError: the DSN or service file cannot be read.
        """
        kwargs: dict[str, Any] = dict(self.bundled.connect_kwargs()) if self.bundled else {}
        if self._external():
            try:
                kwargs.update(conninfo.asyncpg_kwargs(self._resolved()[0]))
            except ValueError as exc:
                raise ConnectError(_bad_dsn(exc)) from None
        elif self.password is not None:
            kwargs["password"] = self.password
        kwargs.update(self.overrides)
        port = os.environ.get("PGPORT")
        if "port" not in kwargs and port and not all(p.strip().isdigit() for p in port.split(",")):
            # asyncpg reads PGPORT itself; its int() error read as a bad connection string
            raise ConnectError(
                f"PGPORT={mask_secrets(port)[:40]!r} is not a port number; set it to one "
                "such as 5432, or unset it."
            )
        return kwargs

    def connect_timeout(self) -> float | None:
        """Seconds to wait (connect_timeout, PGCONNECT_TIMEOUT, 10); None: no limit."""
        params = self._resolved()[0] if self.bundled is None else {}
        try:
            return conninfo.connect_timeout(params, os.environ, CONNECT_TIMEOUT)
        except ValueError as exc:
            raise ConnectError(_bad_dsn(exc)) from None

    def label(self) -> str:
        """How the server is shown anywhere: never with a password."""
        if self.bundled is not None:
            return self.bundled.label()
        if self.dsn:
            return mask_secrets(self.dsn)
        env = os.environ
        if env.get("PGSERVICE"):
            return f"service={env['PGSERVICE']}"
        host = env.get("PGHOST", "local socket")
        port = env.get("PGPORT", "5432")
        user = env.get("PGUSER", "")
        db = env.get("PGDATABASE", "")
        return mask_secrets(f"{user + '@' if user else ''}{host}:{port}{'/' + db if db else ''}")

    def tool_env(self) -> dict[str, str]:
        """Environment for pg_dump, pg_restore, pgbench and psql to reach this server.

        The password travels in PGPASSWORD of the child process only (never in its argv:
        `tool_conn_args()` has none); a service is pinned to the file pgwx read it from.
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
        if self.password is not None:
            env["PGPASSWORD"] = self.password
        if self._external():
            with contextlib.suppress(ConnectError):
                path = self._resolved()[1]
                if path is not None:
                    env["PGSERVICEFILE"] = str(path)
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
        """`-d DSN` for libpq tools when there is a DSN: always without its password.

        Raises:
            ConnectError: the DSN cannot be parsed (so its password could not be taken out).
        """
        if not self.dsn:
            return []
        if self.invalid is not None:
            raise ConnectError(_bad_dsn(ValueError(self.invalid)))
        return ["-d", self.dsn]

    async def connect(
        self,
        purpose: str,
        *,
        statement_timeout_ms: int | None = None,
        timeout: float | None = None,
        settings: dict[str, str] | None = None,
    ) -> asyncpg.Connection:
        """Open one connection tagged `pgwx-<purpose>`; errors become one sentence.

        Args:
            purpose: Suffix of the application_name.
            statement_timeout_ms: The session's statement_timeout, if any.
            timeout: Seconds to wait; None means `connect_timeout()`.
            settings: More settings the session starts with (GUC name → value).
        """
        kwargs = self.connect_kwargs()
        wait = self.connect_timeout() if timeout is None else timeout
        startup = {
            **kwargs.pop("server_settings", {}),
            **(settings or {}),
            "application_name": f"{APP_PREFIX}-{purpose}",
        }
        if statement_timeout_ms is not None:
            startup["statement_timeout"] = str(statement_timeout_ms)
        try:
            return await asyncpg.connect(**kwargs, timeout=wait, server_settings=startup)
        except DRIVER_ERRORS as exc:
            raise ConnectError(explain_connect_error(exc, self.label(), wait)) from None


def _bad_dsn(exc: ValueError) -> str:
    text = mask_secrets(str(exc)).strip().rstrip(".")
    return (
        f"The connection string is not valid ({text}); use a URI such as "
        "postgresql://user@host/db or keyword=value pairs such as 'host=db dbname=app'."
    )


def explain_connect_error(
    exc: BaseException, where: str, timeout: float | None = CONNECT_TIMEOUT
) -> str:
    """One sentence for a failed connection: what went wrong and what to do.

    Args:
        exc: What asyncpg raised.
        where: The server's label (already masked).
        timeout: The connect timeout that was in force, for the message when it ran out.
    """
    text = mask_secrets(str(exc)).strip().rstrip(".")
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
            f"No answer from {where} within {timeout or 0:g} s; check the host, port and "
            "firewall (connect_timeout or PGCONNECT_TIMEOUT set the wait)."
        )
    if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
        return (
            f"Nothing is listening at {where}; is the server running, and are the host and "
            "port right?"
        )
    if isinstance(exc, OSError):
        return f"Could not reach {where} ({text}); check the host name and network."
    if isinstance(exc, ValueError | TypeError):
        return _bad_dsn(ValueError(text))
    return f"Could not connect to {where}: {text}."
