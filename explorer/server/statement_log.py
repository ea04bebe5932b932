"""Statement durations as the server itself logs them, read back from a server log pgwx owns.

With `log_min_duration_statement = 0` PostgreSQL writes one line per finished statement:
`... [PID] APP LOG:  duration: 12.345 ms  statement: COMMIT`. The duration is measured by the
backend from the statement's start to its end, in microseconds, so it times a statement that
runs inside another program (pg_restore's COMMIT) to well under a millisecond — far finer than
any watcher polling pg_stat_activity could. pgwx's own clusters (`LocalServer`) write their
log to `server.log` with `log_line_prefix = '%m [%p] %a '`, which is what the parser expects.

A session opts in through the libpq environment of the client tool
(`PGOPTIONS=-c log_min_duration_statement=0`); the parameter is superuser-only, which is why
this is used on pgwx's own servers (where pgwx connects as the superuser) and nowhere else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

LOG_ALL_OPTION = "-c log_min_duration_statement=0"
"""libpq PGOPTIONS fragment that makes one session log every statement with its duration."""

_LINE = re.compile(
    r"\[(?P<pid>\d+)\] (?P<app>\S*) LOG:  duration: (?P<ms>\d+(?:\.\d+)?) ms  "
    r"(?P<kind>statement|execute [^:]*|parse [^:]*|bind [^:]*): (?P<text>.*)$"
)


@dataclass(frozen=True)
class StatementDuration:
    """One `duration:` line of the server log."""

    pid: int
    """The backend's process id (`%p`)."""
    app: str
    """The session's application_name (`%a`)."""
    seconds: float
    """The duration the server measured."""
    kind: str
    """`statement` (simple query), or `execute …` / `parse …` / `bind …` (extended protocol)."""
    text: str
    """The first line of the statement's text."""

    @property
    def verb(self) -> str:
        """The statement's first word, upper-case (COPY, COMMIT, ALTER...)."""
        words = self.text.split(None, 1)
        return words[0].rstrip(";").upper() if words else ""


def parse_durations(text: str) -> list[StatementDuration]:
    """Every `duration:` line in a chunk of server log (other lines are skipped)."""
    found = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if m:
            found.append(
                StatementDuration(
                    pid=int(m["pid"]),
                    app=m["app"],
                    seconds=float(m["ms"]) / 1000,
                    kind=m["kind"],
                    text=m["text"].strip(),
                )
            )
    return found


def with_log_all(env: dict[str, str]) -> dict[str, str]:
    """A copy of a client tool's environment whose sessions log every statement's duration."""
    out = dict(env)
    out["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {LOG_ALL_OPTION}".strip()
    return out


class StatementLog:
    """The part of one server log written after `mark()`.

    Args:
        path: The server's log file (LocalServer.log_file).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    @classmethod
    def usable(cls, path: Path, log_line_prefix: str, logging_collector: str) -> bool:
        """The log is one file pgwx can read, and its lines carry pid and application_name."""
        return (
            logging_collector == "off"
            and "[%p] %a " in log_line_prefix
            and path.is_file()
            and os.access(path, os.R_OK)
        )

    def mark(self) -> None:
        """Remember where the log ends now; `read()` returns only what comes after."""
        self.offset = self.path.stat().st_size

    def read(self) -> list[StatementDuration]:
        """The `duration:` lines written since `mark()`."""
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        # Only whole lines: a line being written right now is read on the next call.
        end = chunk.rfind(b"\n") + 1
        return parse_durations(chunk[:end].decode(errors="replace"))
