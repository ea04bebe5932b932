"""A connection string that cannot be parsed is never echoed, not even in part (issue 19 item 5).

Each form the issue found printing its secret — a mistyped scheme, another database's URL, a
bare password given as --dsn, a raw @ and space in a URI password — goes through the command
line as a user would type it; stdout, stderr and the log must not hold any piece of the
password, and the sentence must still say what is wrong.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from explorer.server.conninfo import mask_secrets
from tests.support.cli import assert_one_sentence

"""`python -m explorer.cli` in a subprocess with a private store, journal and temp dir."""

Cli = Callable[..., subprocess.CompletedProcess[str]]

FORMS = {
    "mistyped scheme": ("postgresql:/user:Zq7PASSWORD@host/db", ["Zq7PASSWORD"], "URL"),
    "pgsql://": ("pgsql://user:Zq7PASSWORD@host/db", ["Zq7PASSWORD"], "URL"),
    "mysql://": ("mysql://user:Zq7PASSWORD@host/db", ["Zq7PASSWORD"], "URL"),
    "bare password": ("Zq7PASSWORD", ["Zq7PASSWORD", "Zq7"], 'no "="'),
    "raw @ and space": (
        "postgresql://u:p@ssZq7 w0rdZq7@host/db",
        ["ssZq7", "w0rdZq7", "p@ss"],
        "percent-encode",
    ),
    "unclosed quote": ("host=db password='Zq7 PASSWORD", ["Zq7", "PASSWORD"], "closing quote"),
    "unknown keyword": ("password=Zq7PASSWORD colour=blue", ["Zq7PASSWORD"], "not one libpq"),
    "password as a keyword": ("host=db Zq7PASSWORD=1", ["Zq7PASSWORD"], "not one libpq"),
}
"""Form → (--dsn, pieces of the password that must not appear, a word of the sentence)."""


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("command", ["run", "check"])
def test_an_unparseable_dsn_is_never_echoed(
    form: str, command: str, cli: Cli, tmp_path: Path
) -> None:
    dsn, pieces, word = FORMS[form]
    proc = cli(command, "quick-demo", "--dsn", dsn)
    assert_one_sentence(proc, tmp_path, "connection string is not valid", word)
    log = tmp_path / "state" / "pgwx.log"
    shown = proc.stdout + proc.stderr + (log.read_text() if log.exists() else "")
    for piece in pieces:
        assert piece not in shown, (piece, shown)


@pytest.mark.parametrize(
    "text",
    [
        "could not reach pgsql://bob:Zq7PASSWORD@db/app",
        "mysql://bob:Zq7PASSWORD@db/app refused",
        "typo postgresql:/bob:Zq7PASSWORD@db/app here",
        "postgres://bob:Zq7PASSWORD@db/app",
    ],
)
def test_mask_secrets_covers_url_forms_of_any_scheme(text: str) -> None:
    masked = mask_secrets(text)
    assert "Zq7PASSWORD" not in masked and "***@db/app" in masked
