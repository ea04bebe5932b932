"""Markdown tables from run data: the one place a table cell is escaped.

A variant or phase name, a server's label, a verdict or a note comes from a profile, a
recording, a stored row or a server. Put raw into a markdown table, a `|` in it starts another
column and a line break another row: a variant named ``x | 0.50× [0.4–0.6] faster`` would
show a forged verdict cell beside a real run's id. Every markdown table pgwx prints — the
report, the servers' table, `compare`, `history`, `selftest` — builds its rows with `row`
(or `table`), so each cell is escaped here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from explorer.text import printable


def cell(value: object) -> str:
    """`value` as literal text in one markdown table cell.

    Control characters become visible escapes (`explorer.text.printable`), then `\\` and `|`
    are escaped, and the lines left (newline, CR LF) are joined with a space: whatever the
    text, it stays in its own cell of its own row.

    >>> cell("x | 0.50× faster")
    'x \\\\| 0.50× faster'
    """
    text = printable(str(value)).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.splitlines())


def row(cells: Iterable[object]) -> str:
    """One table row, `| a | b |`, every cell escaped by `cell`."""
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def table(header: Sequence[object], rows: Iterable[Iterable[object]]) -> list[str]:
    """The header, the `|---|` line under it and the rows, as lines of markdown."""
    return [row(header), "|" + "|".join("---" for _ in header) + "|", *(row(r) for r in rows)]
