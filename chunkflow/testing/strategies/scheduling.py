"""The dask schedulers a computation runs on, as the ``scheduler=`` argument names them.

``processes`` needs arrays every process can open (a folder, not memory): a test that
draws it creates its arrays on disk.

Examples
--------
>>> from hypothesis import find
>>> find(schedulers(), lambda s: s == "threads")
'threads'
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["SCHEDULERS", "schedulers"]

#: The local schedulers, cheapest first.
SCHEDULERS: tuple[str, ...] = ("sync", "threads", "processes")


def schedulers(*, processes: bool = True) -> st.SearchStrategy[str]:
    """``"sync"``, ``"threads"`` or (when ``processes``) ``"processes"``."""
    return st.sampled_from(SCHEDULERS if processes else SCHEDULERS[:2])
