"""How much a run's own data may grow: bounds tied to the run's size, not fixed numbers.

A profile's prepare step writes data to the run's scratch directory, and its verify row goes
into the notes (and so into the store and every report). Both are held under bounds that grow
with the run's estimated size (its named sizes times `--scale`), and `--allow-large` raises
them: a run ten times larger may prepare ten times more data, a typo in a query may not fill
the disk. One sentence names the bound and the option when one is crossed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.analysis.units import human_bytes

PREPARED_FLOOR = 64 * 1024**2
"""Prepared data any run may write, however small (64 MiB)."""
PREPARED_PER_BYTE = 16
"""Prepared data allowed per byte of the run's size estimate (a row of the estimate is 100
bytes: 1.6 kB of prepared data per sized row leaves room for wide rows)."""
PREPARED_CEILING = 4 * 1024**3
"""Prepared data at most without `--allow-large` (4 GiB)."""
NOTE_FLOOR = 2_000
"""Characters of the verify row the notes keep at --scale 1 (or less)."""
NOTE_CEILING = 20_000
"""Characters of the verify row the notes keep at most without `--allow-large`."""
NOTE_LARGE = 60_000
"""Characters of the verify row with `--allow-large` (under the store's own bound on a text)."""


@dataclass(frozen=True)
class DataBounds:
    """The bounds of one run's own data."""

    prepared_bytes: int = PREPARED_FLOOR
    """Bytes of prepared data (a prepare query's rows, or a prepare file) at most."""
    note_chars: int = NOTE_FLOOR
    """Characters of the verify row kept in the notes."""
    allow_large: bool = False
    """`--allow-large` was given (the sentence then does not suggest it)."""

    def too_much(self, what: str, size: str, bound: str) -> str:
        """'WHAT is SIZE, over this run's bound of BOUND (…); …': a crossed bound, said."""
        advice = (
            "make less of it"
            if self.allow_large
            else "make less of it, or pass --allow-large to raise the bound"
        )
        return (
            f"{what} is {size}, over this run's bound of {bound} (set by its sizes and "
            f"--scale{', raised by --allow-large' if self.allow_large else ''}); {advice}"
        )

    def prepared_over(self, written: int, rows: int) -> str:
        """The sentence of prepared data over its bound, after `rows` rows."""
        return self.too_much(
            f"the prepare step's data (after {rows:,} rows)",
            f"more than {human_bytes(written)}",
            human_bytes(self.prepared_bytes),
        )


def data_bounds(estimate_bytes: int, scale: float, allow_large: bool = False) -> DataBounds:
    """The bounds of a run whose one trial writes about `estimate_bytes` (already scaled).

    Args:
        estimate_bytes: The workload's size estimate for one trial (`Params.estimate`).
        scale: `--scale` (the notes grow with it, from NOTE_FLOOR at 1 to NOTE_CEILING).
        allow_large: `--allow-large`: prepared data may reach the estimate's share however
            far above PREPARED_CEILING, and the notes keep NOTE_LARGE characters.
    """
    prepared = max(PREPARED_FLOOR, estimate_bytes * PREPARED_PER_BYTE)
    note = max(NOTE_FLOOR, math.ceil(NOTE_FLOOR * min(max(scale, 1.0), 1e6)))
    if allow_large:
        return DataBounds(
            prepared_bytes=max(prepared, PREPARED_CEILING),
            note_chars=NOTE_LARGE,
            allow_large=True,
        )
    return DataBounds(
        prepared_bytes=min(prepared, PREPARED_CEILING),
        note_chars=min(note, NOTE_CEILING),
    )
