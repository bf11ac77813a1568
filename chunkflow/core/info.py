"""Plain-text (and notebook HTML) reports for ``.info``."""

from __future__ import annotations

import html
from collections.abc import Sequence

import dask.utils

__all__ = ["InfoReport", "format_bytes"]


def format_bytes(nbytes: int) -> str:
    """Bytes, with dask's human-readable size in brackets from 1 KiB on.

    Examples
    --------
    >>> format_bytes(100), format_bytes(134217728)
    ('100', '134217728 (128.00 MiB)')
    """
    if nbytes < 1024:
        return str(nbytes)
    return f"{nbytes} ({dask.utils.format_bytes(nbytes)})"


class InfoReport:
    """Rows of ``(label, value)`` shown aligned as text, or as an HTML table.

    Examples
    --------
    >>> print(InfoReport([("Type", "Array"), ("Shape", "(2, 3)")]))
    Type  : Array
    Shape : (2, 3)
    """

    def __init__(self, rows: Sequence[tuple[str, str]]) -> None:
        self.rows = list(rows)

    def as_dict(self) -> dict[str, str]:
        """The rows as a mapping from label to value."""
        return dict(self.rows)

    def __getitem__(self, label: str) -> str:
        return self.as_dict()[label]

    def __repr__(self) -> str:
        width = max((len(label) for label, _ in self.rows), default=0)
        return "\n".join(f"{label:<{width}} : {value}" for label, value in self.rows)

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for label, value in self.rows
        )
        return f"<table class='chunkflow-info'>{cells}</table>"
