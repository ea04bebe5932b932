"""The one error family pgwx raises for things a user can cause or fix.

Every user-facing error derives from `PgwxError`; its `str()` is one sentence that says what
went wrong and what to do. The front ends catch `PgwxError` and print it; anything else is a
programming error, reported as such (with a traceback in the log), never dressed as advice.
"""

from __future__ import annotations


class PgwxError(Exception):
    """Something the user can act on; `str()` is one sentence, safe to show (no secrets)."""


class UsageError(PgwxError, ValueError):
    """A bad option or argument: a size out of range, an unknown variant, a missing file."""
