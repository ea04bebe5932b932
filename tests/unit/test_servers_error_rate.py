"""One error rate for everything a multi-server run prints (issue 33, point 5).

Each of a two-server run's three tables held 5 % alone; together a false faster/slower came
up in 7.8–10.5 % of simulated A/A runs. Now the run's α is split between its tables.
"""

from __future__ import annotations

import random

from explorer.analysis.calibration import Scenario
from explorer.analysis.judge import judge
from explorer.analysis.report import verdict_legend
from explorer.analysis.run_family import table_alpha, tables_for_servers
from explorer.analysis.servers import judge_servers, legend
from explorer.analysis.servers_calibration import _records, servers_false_rate


def test_a_two_server_aa_run_claims_a_difference_rarely() -> None:
    """A tolerant bound; the benchmark prints the rate with 400+ runs."""
    anything, _, _ = servers_false_rate(Scenario(variants=2, phases=1, noise=0.10), 150, seed=9)
    assert anything.share <= 0.09, anything.text()


def test_the_tables_of_a_run_on_two_servers_share_alpha() -> None:
    assert tables_for_servers(1) == 1 and tables_for_servers(2) == 3
    assert table_alpha(3) * 3 == 0.05
    s = Scenario(variants=2, phases=1, noise=0.10, repeats=10)
    records = _records(s, 2)
    rng = random.Random(2)
    from explorer.analysis.calibration import _trial

    for record in records:
        record.trials = [_trial(s, v, r + 1, rng) for r in range(10) for v in (0, 1)]
    judged = judge(records[0])
    assert judged.tables == 3
    # Each interval is drawn at its Holm level of this table's share: 1 − 0.05/3.
    v = judged.verdicts[("v1", "p1")]
    assert abs(v.confidence - (1 - 0.05 / 3)) < 1e-9
    text = verdict_legend(judged)
    assert "the words are controlled for the whole table" in text
    assert "each interval is drawn at the level its comparison was tested at" in text
    assert "This run prints 3 such tables" in text and "holds 95 %" not in text
    between = judge_servers(records)
    assert between.tables == 3
    assert "This run prints 3 such tables" in legend(between)
    # One server alone keeps the whole α.
    records[0].axis = None
    assert judge(records[0]).tables == 1
    assert abs(judge(records[0]).verdicts[("v1", "p1")].confidence - 0.95) < 1e-9
