"""A results column says its counts in one form (issue 39: `ext pages` mixed `5580` and
`11.5k`)."""

from __future__ import annotations

from explorer.tui.widgets.results_table import _count


def test_counts_of_one_column_share_one_form() -> None:
    shown = [_count(n).plain for n in (5580, 11_500, 999, 250_000, 6_100_000)]
    assert shown == ["5.6k", "11.5k", "999", "250.0k", "6.1M"]
    assert _count(None).plain == ""
