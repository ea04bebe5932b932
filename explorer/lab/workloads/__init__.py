"""Workload kinds, one module each; a profile names one by its `kind`."""

from __future__ import annotations

import importlib

from explorer.lab.workloads.base import Workload

KINDS = {
    "restore": "restore",
    "bulk-write": "bulk_write",
    "table-kind": "table_kind",
    "toast": "toast",
    "file-extension": "file_extension",
    "index-bloat": "index_bloat",
    "sql": "sql",
}
"""Profile `workload` value → module in this package."""


def workload_class(kind: str) -> type[Workload]:
    """The Workload subclass for a kind; KeyError when there is none."""
    module = importlib.import_module(f"{__name__}.{KINDS[kind]}")
    cls: type[Workload] = module.WORKLOAD
    return cls
