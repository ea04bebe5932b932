"""The undo journal: server-level changes not yet undone, on disk, one file per server.

Every change is journaled *before* it is made, keyed by the server's system identifier, so
that a pgwx killed mid-run puts it back at its next start. The file is outside data: it is
read entry by entry, and an entry pgwx could not have written — a setting pgwx never changes
(work_mem, shared_preload_libraries), a value that is not text — is never applied. A run
refuses to start over such a journal; `pgwx restore` keeps the file as `.corrupt-<time>`,
names what it set aside, and puts back the rest.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from explorer.errors import PgwxError
from explorer.models import SERVER_KNOBS, refused_setting
from explorer.paths import journal_path

MANAGED = frozenset({*SERVER_KNOBS, "max_wal_senders"})
"""Every setting pgwx changes with ALTER SYSTEM (wal_level=minimal brings max_wal_senders)."""

OTHER_CONTEXTS = ("sighup", "postmaster", "superuser", "superuser-backend")
"""Contexts of a variant's other settings that pgwx sets with ALTER SYSTEM (and journals)."""

UNSAFE_IF_LOST = ("fsync", "full_page_writes", "synchronous_commit")
"""Settings whose journal entry, if lost, is put back to the server default (the safe side)."""

_ENTRY = re.compile(
    r'"(?P<name>[a-z_][a-z0-9_.]*)"\s*:\s*\{\s*"auto"\s*:\s*(?P<auto>null|"(?:[^"\\]|\\.)*")'
)
"""One `"name": {"auto": …}` entry, found even in a damaged journal."""
_NAME = re.compile(r"[a-z_][a-z0-9_.]{0,62}")

SHOWN = 40
"""Characters of an outside value shown in a sentence (the rest is cut)."""


class JournalUnreadable(PgwxError):
    """The undo journal exists but cannot be read: settings may be left changed."""


class JournalUnusable(PgwxError):
    """The journal's directory cannot exist (a file is in its path): nothing can be journaled."""


def shown(value: object) -> str:
    """An outside value as a short, quoted, printable phrase (never raw control characters)."""
    text = value if isinstance(value, str) else json.dumps(value)
    text = text if len(text) <= SHOWN else text[:SHOWN] + "…"
    return repr(text)


def shown_name(name: str) -> str:
    """A setting name from the journal as shown: as is when it looks like one, else quoted."""
    return name if _NAME.fullmatch(name) else shown(name)


def entry_problem(name: str, entry: object) -> str | None:
    """Why pgwx could not have written this journal entry; None when it could have."""
    if name not in MANAGED and not _other_setting(name, entry):
        return "a setting pgwx never changes: left as it is"
    if not isinstance(entry, dict) or "auto" not in entry:
        return f"not a journal entry ({shown(entry)})"
    if entry["auto"] is not None and not isinstance(entry["auto"], str):
        return f"its earlier value {shown(entry['auto'])} is not text"
    if entry.get("set") is not None and not isinstance(entry["set"], str):
        return f"the value pgwx set, {shown(entry['set'])}, is not text"
    return None


def _other_setting(name: str, entry: object) -> bool:
    """A variant's other setting pgwx set with ALTER SYSTEM: the entry names its context
    (reload or restart), and the name is one a profile may set (never a program, a library
    or a file: `refused_setting`)."""
    return (
        isinstance(entry, dict)
        and entry.get("context") in OTHER_CONTEXTS
        and refused_setting(name) is None
    )


def _free_name(path: Path) -> Path:
    """`<path>.corrupt-<time>`, numbered when that name is taken (never overwrite a kept one)."""
    stem = f"{path.name}.corrupt-{int(time.time())}"
    aside, n = path.with_name(stem), 1
    while aside.exists():
        aside, n = path.with_name(f"{stem}-{n}"), n + 1
    return aside


class Journal:
    """Server-level changes not yet undone, on disk, one file per server."""

    def __init__(self, system_identifier: str, directory: Path | None = None) -> None:
        self.path = journal_path(system_identifier, directory)

    def _read(self) -> dict[str, Any]:
        """The file's JSON object as it is ({} when there is no file)."""
        try:
            entries = json.loads(self.path.read_text())
            if not isinstance(entries, dict):
                raise ValueError("not a journal")
            return entries
        except FileNotFoundError:
            return {}
        except NotADirectoryError:
            # No journal can ever have been written there, so nothing was left changed.
            raise JournalUnusable(
                f"pgwx cannot keep its undo journal in {self.path.parent}: part of that path "
                "is a file; point PGWX_STATE_DIR at a directory (or unset it)"
            ) from None
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it is damaged"
            raise JournalUnreadable(self._sentence(why.lower())) from None

    def _sentence(self, why: str) -> str:
        return (
            f"the undo journal {self.path} cannot be read ({why}), so server "
            "settings pgwx changed may still be changed: run `pgwx restore` (with the "
            "same --dsn) to put them back; the file is kept until then"
        )

    def load(self) -> dict[str, dict[str, Any]]:
        """Setting name → {"auto": previous postgresql.auto.conf value or None,
        "set": the value pgwx set (absent in journals of older pgwx)}.

        Raises:
            JournalUnreadable: the file exists but cannot be read or parsed, or holds an
                entry pgwx could not have written. It is never taken for empty: it is what
                tells pgwx that fsync may be off on a server.
        """
        entries = self._read()
        bad = {n: why for n, e in entries.items() if (why := entry_problem(n, e))}
        if bad:
            named = "; ".join(f"{shown_name(n)} ({why})" for n, why in bad.items())
            raise JournalUnreadable(self._sentence(f"it names {named}"))
        return dict(entries)

    def sort_out(self) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """What `pgwx restore` can put back from a damaged journal, and what it sets aside.

        Returns:
            The entries pgwx could have written; every other name → why it is set aside.
            From a file that is not JSON any more, the entries still recognisable in it.
        """
        try:
            entries = self._read()
        except JournalUnreadable:
            try:
                text = self.path.read_bytes().decode("utf-8", "replace")
            except OSError:
                return {}, {}
            entries = {m["name"]: {"auto": json.loads(m["auto"])} for m in _ENTRY.finditer(text)}
        good: dict[str, dict[str, Any]] = {}
        bad: dict[str, str] = {}
        for name, entry in entries.items():
            why = entry_problem(name, entry)
            if why is None:
                good[name] = dict(entry)
            else:
                bad[name] = why
        return good, bad

    def salvage(self) -> dict[str, dict[str, Any]]:
        """What can still be put back from a damaged journal (for `pgwx restore` only)."""
        return self.sort_out()[0]

    def set_aside(self) -> Path:
        """Keep a damaged journal as `<name>.corrupt-<time>` once its salvage is journaled."""
        aside = _free_name(self.path)
        self.path.replace(aside)
        return aside

    def keep_aside(self, entries: dict[str, Any]) -> Path:
        """Write entries taken out of the journal (the server rejected them) beside it."""
        aside = _free_name(self.path)
        private_dir(aside.parent)
        with os.fdopen(os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            json.dump(entries, f, indent=1)
        return aside

    def save(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write durably (tmp + fsync + rename); remove the file when empty."""
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        private_dir(self.path.parent)
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            json.dump(entries, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)


def private_dir(path: Path) -> None:
    """Make the journal's directory, 0700: server names and settings are the user's business.

    pgwx's own state directory is tightened if an older pgwx left it open; a directory named
    by $PGWX_STATE_DIR that exists is the user's, and is left as it is.
    """
    if not path.exists():
        path.mkdir(mode=0o700, parents=True)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask
    elif not os.environ.get("PGWX_STATE_DIR") and path.stat().st_mode & 0o077:
        path.chmod(0o700)
