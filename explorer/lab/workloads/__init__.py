"""Workload kinds, one module each; a profile names one by its `kind`."""

from __future__ import annotations

import importlib

from explorer.lab.workloads.base import Workload
from explorer.models import Profile

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


def build_workload(profile: Profile, scale: float = 1.0) -> Workload:
    """The profile's workload, its parameters validated and multiplied by `scale`.

    Raises:
        KeyError: the profile names no known workload kind.
        pydantic.ValidationError: the parameters do not fit the workload (a ValueError).
    """
    cls = workload_class(profile.workload)
    params = cls.params_model.model_validate(profile.params)
    return cls(params.scaled(scale))
