"""libpq connection strings as libpq reads them: URI and keyword forms, services, masking.

pgwx talks to servers through asyncpg but runs libpq tools (pg_dump, pg_restore, pgbench) as
well, so a DSN must mean the same to both. This module parses either form into libpq keywords,
fills them from a connection service file, turns them into asyncpg.connect() keywords, strips
the password out of a DSN for a child's command line, and masks secrets in any sentence.

asyncpg has no equivalent for keepalives*, tcp_user_timeout, channel_binding, gssencmode,
gssdelegation, require_auth, requirepeer, load_balance_hosts, client_encoding, replication,
sslcompression, sslsni, sslcertmode, sslcrldir, sslkeylogfile and the oauth_* options: pgwx
accepts and ignores them for its own sessions (the libpq tools it runs still honour them).
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

URI_PREFIXES = ("postgresql://", "postgres://")
"""What makes a connection string a URI for libpq; anything else is keyword/value pairs."""

KEYWORDS = frozenset(
    """host hostaddr port dbname user password passfile require_auth channel_binding
    connect_timeout client_encoding options application_name fallback_application_name
    keepalives keepalives_idle keepalives_interval keepalives_count tcp_user_timeout
    replication gssencmode sslmode sslnegotiation sslcompression sslcert sslkey sslkeylogfile
    sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer
    ssl_min_protocol_version ssl_max_protocol_version min_protocol_version
    max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs
    load_balance_hosts oauth_issuer oauth_client_id oauth_client_secret oauth_scope
    requiressl""".split()
)
"""Every keyword libpq 18 accepts; any other is refused, as libpq refuses it."""

_DIRECT = {
    "user": "user",
    "password": "password",
    "dbname": "database",
    "passfile": "passfile",
    "target_session_attrs": "target_session_attrs",
    "krbsrvname": "krbsrvname",
    "gsslib": "gsslib",
}
"""libpq keyword → asyncpg.connect() keyword, where asyncpg takes it as is."""

_SSL_QUERY = (
    "sslcert",
    "sslkey",
    "sslrootcert",
    "sslcrl",
    "sslpassword",
    "sslnegotiation",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
)
"""SSL options asyncpg reads only from a DSN's query string."""

DEFAULT_SYSCONFDIR = "/etc/postgresql-common"
"""Where Debian's libpq looks for pg_service.conf when PGSYSCONFDIR is not set."""


def is_uri(dsn: str) -> bool:
    """The string is a libpq URI (postgresql:// or postgres://)."""
    return dsn.lstrip().startswith(URI_PREFIXES)


def parse_dsn(dsn: str) -> dict[str, str]:
    """libpq keywords of a URI or keyword/value connection string.

    Raises:
        ValueError: why, as libpq would refuse the string, in words that never quote any of
            it (a string that cannot be parsed may be a password, or hold one anywhere).
    """
    text = dsn.strip()
    return _parse_uri(text) if is_uri(text) else _parse_keywords(text)


_OTHER_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
"""A URL of some other scheme (pgsql://, mysql://) or a mistyped one (postgresql:/)."""


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"{n}th")


def _check(key: str, what: str, n: int) -> None:
    if key not in KEYWORDS:
        raise ValueError(f"the {_ordinal(n)} {what} is not one libpq knows")


def _parse_keywords(text: str) -> dict[str, str]:
    """keyword = value pairs; values quoted with '…', \\ escapes the next character."""
    if _OTHER_URI.match(text):
        raise ValueError("it looks like a URL but does not start with postgresql:// or postgres://")
    params: dict[str, str] = {}
    i, n = 0, len(text)
    words = 0
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return params
        start = i
        while i < n and text[i] != "=" and not text[i].isspace():
            i += 1
        key = text[start:i]
        while i < n and text[i].isspace():
            i += 1
        words += 1
        if i >= n or text[i] != "=":
            raise ValueError(f'the {_ordinal(words)} word has no "=" after a keyword')
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        if i < n and text[i] == "'":
            i += 1
            while True:
                if i >= n:
                    raise ValueError("a quoted value has no closing quote")
                if text[i] == "\\" and i + 1 < n:
                    value.append(text[i + 1])
                    i += 2
                elif text[i] == "'":
                    i += 1
                    break
                else:
                    value.append(text[i])
                    i += 1
        else:
            while i < n and not text[i].isspace():
                if text[i] == "\\":
                    i += 1
                    if i < n:
                        value.append(text[i])
                        i += 1
                else:
                    value.append(text[i])
                    i += 1
        _check(key, "keyword", words)
        params[key] = "".join(value)


def _split_uri(uri: str) -> tuple[str, str | None, str, str | None, str | None]:
    """(prefix, userinfo, hostspec, path, query) of a URI, split where libpq splits it."""
    prefix = next(p for p in URI_PREFIXES if uri.startswith(p))
    rest = uri[len(prefix) :]
    userinfo = None
    m = re.match(r"[^@/]*", rest)
    assert m is not None
    if rest[m.end() : m.end() + 1] == "@":
        userinfo, rest = m.group(), rest[m.end() + 1 :]
    m = re.match(r"[^/?]*", rest)
    assert m is not None
    hostspec, rest = m.group(), rest[m.end() :]
    path = query = None
    if rest.startswith("/"):
        path, sep, q = rest[1:].partition("?")
        query = q if sep else None
    elif rest.startswith("?"):
        query = rest[1:]
    return prefix, userinfo, hostspec, path, query


def _parse_uri(uri: str) -> dict[str, str]:
    params: dict[str, str] = {}
    _, userinfo, hostspec, path, query = _split_uri(uri)
    if userinfo is not None:
        user, sep, password = userinfo.partition(":")
        if user:
            params["user"] = unquote(user)
        if sep and password:
            params["password"] = unquote(password)
    hosts: list[str] = []
    ports: list[str] = []
    for item in hostspec.split(",") if hostspec else []:
        if item.startswith("["):
            close = item.find("]")
            if close < 0 or item[close + 1 : close + 2] not in ("", ":"):
                raise ValueError("an IPv6 host address in the URI is not closed by ]")
            host, port = item[1:close], item[close + 2 :]
        else:
            host, _, port = item.partition(":")
        if re.search(r"[@\s]", host):
            # a raw @ or a space in the password puts its tail here: never shown as a host
            raise ValueError(
                "the URI's host has an @ or a space in it: percent-encode @ : / and spaces "
                "in a URI password as %40 %3A %2F %20"
            )
        hosts.append(unquote(host))
        ports.append(unquote(port))
    if any(hosts):
        params["host"] = ",".join(hosts)
    for port in ports:
        if port and not port.isdigit():
            raise ValueError("the URI's port is not a number")
    if any(ports):
        params["port"] = ",".join(ports)
    if path:
        params["dbname"] = unquote(path)
    for number, pair in enumerate((query or "").split("&"), 1):
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError('a query parameter of the URI has no "="')
        key, value = unquote(key), unquote(value)
        if key == "ssl" and value == "true":
            key, value = "sslmode", "require"
        _check(key, "query parameter of the URI", number)
        params[key] = value
    return params


# ------------------------------------------------------------------------------ services


def service_files(env: Mapping[str, str]) -> list[Path]:
    """Where libpq looks for a service, in order: the user's file, then the system's."""
    user = env.get("PGSERVICEFILE") or str(
        Path(env.get("HOME") or Path.home()) / ".pg_service.conf"
    )
    system = Path(env.get("PGSYSCONFDIR") or DEFAULT_SYSCONFDIR) / "pg_service.conf"
    return [Path(user), system]


def read_service(name: str, env: Mapping[str, str]) -> tuple[dict[str, str], Path]:
    """The keywords of service `name` and the file they came from (the first that has it).

    Raises:
        ValueError: no file defines the service, or the file defining it is malformed.
    """
    for path in service_files(env):
        if not path.is_file():
            continue
        parser = configparser.ConfigParser(
            interpolation=None, delimiters=("=",), comment_prefixes=("#",), strict=False
        )
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keywords keep case
        try:
            parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
        except (OSError, UnicodeDecodeError, configparser.Error) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f'cannot read service file "{path}": {first}') from None
        if not parser.has_section(name):
            continue
        params = dict(parser[name])
        for key in params:
            if key == "service":
                raise ValueError(f'nested "service" specifications are not supported in "{path}"')
            if key not in KEYWORDS:
                raise ValueError(f'invalid connection option "{key}" in service file "{path}"')
        return params, path
    raise ValueError(f'definition of service "{name}" not found')


def resolve(
    dsn: str | None, env: Mapping[str, str] | None = None
) -> tuple[dict[str, str], Path | None]:
    """libpq keywords of `dsn`, filled from its service (or PGSERVICE) as libpq fills them.

    Keywords in the string win over the service file's; the environment (PGHOST …) comes after
    both and is left to asyncpg. Returns the keywords and the service file used, if any.
    """
    env = os.environ if env is None else env
    params = parse_dsn(dsn) if dsn else {}
    service = params.get("service") or env.get("PGSERVICE")
    if not service:
        return params, None
    from_file, path = read_service(service, env)
    return {**from_file, **params}, path


# ------------------------------------------------------------------------------ asyncpg


def connect_timeout(
    params: Mapping[str, str], env: Mapping[str, str], default: float
) -> float | None:
    """Seconds to wait for a connection: connect_timeout, else PGCONNECT_TIMEOUT, else default.

    As in libpq 18, zero or a negative value means wait indefinitely (None).
    """
    raw = params.get("connect_timeout") or env.get("PGCONNECT_TIMEOUT")
    if raw is None or not raw.strip():
        return default
    try:
        seconds = int(raw.strip())
    except ValueError:
        raise ValueError(
            f'invalid integer value "{raw}" for connection option "connect_timeout"'
        ) from None
    return float(seconds) if seconds > 0 else None


def _server_options(options: str) -> dict[str, str]:
    """`-c name=value` / `--name=value` settings of libpq's `options` (\\ escapes a space)."""
    words: list[str] = []
    current: list[str] = []
    chars = iter(options)
    for c in chars:
        if c == "\\":
            current.append(next(chars, ""))
        elif c.isspace():
            if current:
                words.append("".join(current))
            current = []
        else:
            current.append(c)
    if current:
        words.append("".join(current))
    settings: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-c" and i + 1 < len(words):
            word, i = words[i + 1], i + 1
        elif word.startswith("-c"):
            word = word[2:]
        elif word.startswith("--"):
            word = word[2:]
        else:
            raise ValueError(f'the "options" connection option "{word}" is not -c name=value')
        name, sep, value = word.partition("=")
        if not sep:
            raise ValueError(f'the "options" connection option "{word}" is not -c name=value')
        settings[name.replace("-", "_")] = value
        i += 1
    return settings


def asyncpg_kwargs(params: Mapping[str, str]) -> dict[str, Any]:
    """asyncpg.connect() keywords for libpq keywords (without timeout; see connect_timeout).

    What is left out, asyncpg takes from the environment (PGHOST, PGPASSWORD, ~/.pgpass …).
    """
    kwargs: dict[str, Any] = {}
    hosts = params.get("hostaddr") or params.get("host")
    if hosts:
        listed = hosts.split(",")
        kwargs["host"] = listed if len(listed) > 1 else listed[0]
    if params.get("port"):
        try:
            ports = [int(p) for p in params["port"].split(",")]
        except ValueError:
            raise ValueError(f'invalid port number "{params["port"]}"') from None
        kwargs["port"] = ports if len(ports) > 1 else ports[0]
    for key, name in _DIRECT.items():
        if params.get(key):
            kwargs[name] = params[key]
    sslmode = params.get("sslmode") or ("require" if params.get("requiressl") == "1" else None)
    if sslmode:
        kwargs["ssl"] = sslmode
    ssl_files = {k: params[k] for k in _SSL_QUERY if params.get(k)}
    if ssl_files:
        # asyncpg reads these from a DSN only; a DSN of nothing but the query carries them
        kwargs["dsn"] = "postgresql://?" + "&".join(
            f"{k}={quote(v, safe='')}" for k, v in ssl_files.items()
        )
    if params.get("options"):
        kwargs["server_settings"] = _server_options(params["options"])
    return kwargs


# ------------------------------------------------------------------------------ secrets


def _quote_value(value: str) -> str:
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def strip_password(dsn: str) -> tuple[str, str | None]:
    """The DSN without its password (in the same form), and the password.

    Raises:
        ValueError: the DSN cannot be parsed.
    """
    text = dsn.strip()
    if not is_uri(text):
        params = _parse_keywords(text)
        password = params.pop("password", None)
        if password is None:
            return dsn, None
        return " ".join(f"{k}={_quote_value(v)}" for k, v in params.items()), password
    password = _parse_uri(text).get("password")
    prefix, userinfo, hostspec, path, query = _split_uri(text)
    out = prefix
    if userinfo is not None:
        user = userinfo.partition(":")[0]
        out += f"{user}@" if user else ""
    out += hostspec
    if path is not None:
        out += "/" + path
    if query is not None:
        kept = [p for p in query.split("&") if unquote(p.partition("=")[0]) != "password"]
        if kept:
            out += "?" + "&".join(kept)
    return out, password


_URL_USERINFO = re.compile(
    r"(?P<head>\b[a-z][a-z0-9+.-]*:/{0,2}[^\s:@/?#]*:)(?P<secret>\S*)@(?=[^@\s]*(?:\s|$))",
    re.IGNORECASE,
)
"""user:password@ of a URL of any scheme (postgresql://, pgsql://, mysql://, a mistyped
postgresql:/), up to its last @ (a raw @ in a password must not leak)."""

_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:ssl)?password=)(?P<secret>[^&\s#]*)", re.IGNORECASE)
_KEYWORD_SECRET = re.compile(
    r"(?<![\w?&])(?P<head>(?:pg|ssl)?password\s*=\s*)"
    r"(?P<secret>'(?:[^'\\]|\\.)*(?:'|\\?$)|(?:[^\s\\]|\\.)+)",
    re.IGNORECASE,
)


def mask_secrets(text: str) -> str:
    """Replace every password in `text` with ***: URL DSNs and keyword DSNs anywhere in it.

    >>> mask_secrets("could not connect to postgresql://bob:s3cret@db/app: refused")
    'could not connect to postgresql://bob:***@db/app: refused'
    """
    text = _URL_USERINFO.sub(r"\g<head>***@", text)
    text = _QUERY_SECRET.sub(r"\g<head>***", text)
    return _KEYWORD_SECRET.sub(r"\g<head>***", text)
