"""The ``log=`` of :func:`~chunkflow.copy`, :func:`~chunkflow.copy_all` and
:func:`~chunkflow.copy_store`: a line per node or key, then a summary, as zarr-python 2
prints them.

Examples
--------
>>> import io
>>> out = io.StringIO()
>>> with CopyLog(out) as log:
...     log("copy /a")
...     log.summary(1, 0, 1234)
>>> print(out.getvalue(), end="")
copy /a
all done: 1 copied, 0 skipped, 1,234 bytes copied
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, Self

from chunkflow.errors import ArgumentTypeError

__all__ = ["CopyLog", "LogTarget"]

#: What ``log=`` takes: a callable given each line, a file path, or a file-like object.
LogTarget = Callable[[str], Any] | str | IO[str] | None


class CopyLog:
    """Writes a copy's lines to ``log``: nothing for ``None``, each line to a callable,
    a line per ``print`` to a file-like object (flushed, for immediate feedback), or to
    a file ``log`` names (opened for writing, closed on exit)."""

    def __init__(self, log: LogTarget = None) -> None:
        self._func: Callable[[str], Any] | None = None
        self._file: IO[str] | None = None
        self._owned = False
        if log is None:
            return
        if callable(log):
            self._func = log
        elif isinstance(log, str):
            self._file, self._owned = open(log, "w", encoding="utf-8"), True  # noqa: SIM115
        elif hasattr(log, "write"):
            self._file = log
        else:
            raise ArgumentTypeError(
                f"log must be a callable, a file path or a file-like object, got {log!r}")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owned and self._file is not None:
            self._file.close()

    def __call__(self, line: str) -> None:
        if self._file is not None:
            print(line, file=self._file)
            if hasattr(self._file, "flush"):
                self._file.flush()
        elif self._func is not None:
            self._func(line)

    def summary(self, copied: int, skipped: int, n_bytes: int) -> None:
        """The closing line: counts with thousands separators."""
        self(f"all done: {copied:,} copied, {skipped:,} skipped, {n_bytes:,} bytes copied")
