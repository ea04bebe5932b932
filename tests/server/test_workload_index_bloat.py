"""The index-bloat workload on real servers: VACUUM keeps the pages, REINDEX gives them back."""

from __future__ import annotations

from explorer.lab.profiles.catalog import load_profile
from explorer.models import Knobs, TableKind, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile


async def test_index_pages_stay_after_vacuum_and_shrink_after_reindex(
    any_pg: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("index-bloat")
    profile = profile.model_copy(
        update={
            "variants": [
                *profile.variants,
                Variant(name="temporary", knobs=Knobs(table_kind=TableKind.TEMPORARY)),
            ]
        }
    )
    record, _ = await run_profile(any_pg, profile, scale=0.2, repeats=1)  # 200,000 rows
    assert record.status == "finished"
    for trial in record.trials:
        assert trial.status == "ok", trial.reason
        got = {p.name: p for p in trial.phases}
        assert list(got) == ["fill", "delete-90pct", "vacuum", "reindex"]
        assert got["fill"].rows == 200_000 and got["delete-90pct"].rows == 180_000
        fill, delete, vacuum, reindex = (got[n].detail for n in got)
        assert all("plan" not in d for d in (fill, delete, vacuum, reindex)), "not index-only"
        assert fill["index_pages"] > 500
        # deleting and vacuuming empties index pages but never returns them to the file
        assert delete["index_pages"] == vacuum["index_pages"] == fill["index_pages"]
        # the planner learns of the deletion only from VACUUM ANALYZE
        assert delete["ioscan_cost"] == fill["ioscan_cost"]
        assert vacuum["ioscan_cost"] > 3 * fill["ioscan_cost"]
        # REINDEX packs the 10% that is left into about a tenth of the pages
        assert reindex["index_pages"] < fill["index_pages"] / 8
        assert vacuum["ioscan_cost"] > 3 * reindex["ioscan_cost"]
