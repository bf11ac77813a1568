"""Parameters renamed in 0.2.0: the old names keep working for one release.

:func:`renamed_parameters` is the one place that does it: a call that passes an old
name gets a :class:`FutureWarning` naming the new one (and, where the meaning changed,
how), and the value goes to the new parameter. The table of names is in the docs
(``docs/parameters.rst``); the renames are listed in ``CHANGELOG.md``.

Examples
--------
>>> import warnings
>>> @renamed_parameters(dest="out")
... def copy(source, out=None):
...     return out
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     copy(1, dest="there")
'there'
>>> print(caught[0].message)
copy(): dest= is renamed out=; dest= stops working in a later release
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from chunkflow.errors import ArgumentTypeError

__all__ = ["MEANINGS", "renamed_parameters"]

F = TypeVar("F", bound=Callable[..., Any])

#: What a changed meaning adds to the warning, by new name.
MEANINGS = {
    "max_memory": "max_memory= is the budget of one task (not of one worker): divide a "
                  "worker's budget by its threads to keep the same total",
}

def renamed_parameters(**renames: str) -> Callable[[F], F]:
    """Accept each old name (a keyword of this decorator) for its new one, with a
    :class:`FutureWarning`.

    Passing both names is a ``TypeError``, as Python's own for a repeated argument.
    Positional calls are untouched: a renamed parameter keeps its position.
    """

    def decorate(func: F) -> F:
        parameters = inspect.signature(func).parameters
        forwards = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        missing = sorted(set(renames.values()) - set(parameters))
        # A typo here would send the value nowhere (or to **kwargs, when the function
        # forwards its keywords to one that takes the new name).
        if missing and not forwards:
            raise ArgumentTypeError(f"{func.__qualname__} has no parameter {missing}")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            name = wrapper.__name__  # as the caller knows it (set after wrapping, maybe)
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise ArgumentTypeError(f"{name}() got both {old}= (its old name) and {new}=")
                meaning = MEANINGS.get(new)
                warnings.warn(
                    f"{name}(): {old}= is renamed {new}="
                    f"{f' ({meaning})' if meaning else ''}; {old}= stops working in a "
                    "later release", FutureWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # wraps keeps func's signature

    return decorate
