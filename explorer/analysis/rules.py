"""The version of the rules verdicts are judged by, kept with every stored verdict.

Bump `RULES` with any change to how a verdict is reached (its statistics, the table's
correction, the looks): a stored run whose verdict rows carry an older number is judged again
the next time they are written (`explorer.lab.store.verdicts`), and `--format json` says which
rules judged the document.
"""

RULES = 1
"""1: Hodges–Lehmann ratio with the Moses interval, Mann–Whitney p, Holm over the table,
α split over the planned looks (pgwx 0.x, issue 38)."""
