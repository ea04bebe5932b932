"""The commands pgwx suggests carry the store they were made in.

After `pgwx --results STORE run …` or `import`, a hint such as `pgwx report RUN` without the
store would look in another one (the default file) and say the run does not exist. Every hint
names the store `--results` gave (one from PGWX_RESULTS is in force in the same shell, so the
hint works as printed there) — a team URL without its password (libpq finds that in
PGPASSWORD or ~/.pgpass, never on a screen).
"""

from __future__ import annotations

import shlex

from explorer.lab.store.backends import is_postgres_url
from explorer.server.conninfo import mask_secrets, strip_password

_given: list[str] = []
"""The --results of this command, when one was given (`remember`)."""


def remember(results: str | None) -> None:
    """Keep the command's --results (None: not given) for the hints it prints."""
    _given[:] = [results] if results else []


def store_option() -> str:
    """' --results STORE' when the command was given --results, else ''."""
    if not _given:
        return ""
    location = _given[0]
    if is_postgres_url(location):
        try:
            location = strip_password(location)[0]
        except ValueError:
            location = mask_secrets(location)
    return f" --results {shlex.quote(location)}"


def hint(command: str) -> str:
    """`pgwx [--results STORE] COMMAND`, for a sentence that tells the user what to run next."""
    return f"pgwx{store_option()} {command}"
