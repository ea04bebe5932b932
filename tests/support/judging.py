"""Counting the judgements a command makes (issue 36: a run's verdicts are judged once)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from explorer.analysis import judge as judge_module


def count_judgements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of `explorer.analysis.judge.judge`, wherever a module imported it from
    (one entry per call: the run judged, or 'look' for a judgement at an auto run's look).
    Import the modules to count before calling this."""
    real: Callable[..., Any] = judge_module.judge
    calls: list[str] = []

    def counted(record: Any, **kwargs: Any) -> Any:
        calls.append("look" if record.status == "running" else record.id)
        return real(record, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("explorer") and getattr(module, "judge", None) is real:
            monkeypatch.setattr(module, "judge", counted)
    return calls
