"""What an undo of server settings actually did, and the sentence that says it.

A run, `pgwx restore` and `pgwx server start|stop` all end by saying whether the server is as
it was. That sentence is made from what happened — the names put back, the journal entries
still pending afterwards (read back from the journal, not assumed), the file they live in —
and, when something is left, the one command that finishes the job. Never a fixed string.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from explorer.server import datadir
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer, default_data_dir


def data_dir_option(server: LocalServer) -> str:
    """' --data-dir DIR' for a command line that must reach this cluster ('' for the bundled
    18's default one); a cluster of another installation also names its programs."""
    if not server.is_bundled_build:
        return (
            f" --pg-bin {shlex.quote(str(server.bindir))}"
            f" --data-dir {shlex.quote(str(server.data_dir))}"
        )
    if server.data_dir == default_data_dir().absolute():
        return ""
    return f" --data-dir {shlex.quote(str(server.data_dir))}"


def restore_command(target: Target) -> str:
    """The `pgwx restore …` that reaches this server again (no password on it, ever)."""
    if target.bundled is not None:
        return f"pgwx restore{data_dir_option(target.bundled)}"
    if target.dsn:
        command = f"pgwx restore --dsn {shlex.quote(target.dsn)}"
        return command + (" (with the same password)" if target.password else "")
    return "pgwx restore (with the same PG* environment)"


@dataclass
class Undo:
    """What putting server settings back did.

    Args:
        put_back: Settings put back as they were.
        left: Journal entries still pending afterwards (name → entry; "set" is the value).
        where: The file the settings left are set in (postgresql.auto.conf), when known.
        why: Why the undo stopped, one line, when it did.
        set_aside: Journal entries never applied (name → why), kept beside the journal.
    """

    put_back: list[str] = field(default_factory=list)
    left: dict[str, dict[str, Any]] = field(default_factory=dict)
    where: str | None = None
    why: str | None = None
    set_aside: dict[str, str] = field(default_factory=dict)
    unknown: str | None = None
    """Why what is left cannot be known (the journal cannot be read), when it cannot."""

    @property
    def complete(self) -> bool:
        """Nothing pgwx set is left on the server (as far as can be known)."""
        return not self.left and self.unknown is None

    def left_values(self) -> str:
        """'wal_level='minimal', shared_buffers' — each left setting, with its value if known."""
        return ", ".join(
            f"{name}={entry['set']!r}" if isinstance(entry.get("set"), str) else name
            for name, entry in self.left.items()
        )

    def sentence(self, command: str) -> str:
        """What the server holds now, in one sentence (a clause, to follow 'run … ended;')."""
        if self.unknown is not None:
            return f"server settings may still be changed ({self.unknown}); run `{command}`"
        if self.left:
            where = self.where or "postgresql.auto.conf in the server's data directory"
            why = f" ({self.why})" if self.why else ""
            return (
                f"server settings NOT all put back{why}: {self.left_values()} still set in "
                f"{where}; run `{command}` to put them back"
            )
        aside = ""
        if self.set_aside:
            aside = "; journal entries set aside: " + "; ".join(
                f"{n} ({why})" for n, why in self.set_aside.items()
            )
        if self.put_back:
            return f"server settings put back ({', '.join(self.put_back)}){aside}"
        return f"no server settings were left changed{aside}"


def auto_conf_of(target: Target) -> str | None:
    """postgresql.auto.conf of a server pgwx owns (its path is known without asking)."""
    if target.bundled is None:
        return None
    return str(target.bundled.data_dir / datadir.AUTO_CONF)
