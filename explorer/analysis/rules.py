"""The version of the rules verdicts are judged by, kept with every stored verdict.

Bump `RULES` with any change to how a verdict is reached (its statistics, the table's
correction, the looks): a stored run whose verdict rows carry an older number is judged again
the next time they are written (`explorer.lab.store.verdicts`), and `--format json` says which
rules judged the document.
"""

RULES = 2
"""1: the rules as pgwx 0.3 after issues 33 and 35 judge (paired rounds where the run was
interleaved, ratios down to the clock's 1 ms, Holm over the table and the run's family, α
split over the planned looks) — the first rules whose verdicts were stored (issue 38).
2: complete rounds above the floor judged by the blocked t test on log durations
(`explorer.analysis.blocked`: every variant's trials of the round remove what the machine did
in it, each side keeps its own variance) instead of the signed rank; no stop on a look the
table's size made useless (issue 35)."""
