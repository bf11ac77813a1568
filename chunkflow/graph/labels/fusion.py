"""The small tasks of a labelling job as one task, where their chains cost more in
round trips than in work.

Besides its two passes over the blocks (scan, write), a labelling job is made of small
tasks: the faces and info picked from each scan, the pairs of touching parts, the merge
tree, the numbering and the labels of the exposed parts, a millisecond or so each and
some 25 of them one after another for 64 blocks. On threads that is nothing; on a
distributed cluster each step waits for the scheduler and for the data it moves, about
20 ms, and each task costs the scheduler about 1 ms (16384² in 1024² blocks on 2
workers: 0.48 s of idle workers in a 3 s job, 323 tasks). For jobs of up to
:data:`FUSE_BLOCKS` blocks those tasks run as one, the same functions in the same order
(``dask.get`` inside the task), and the writes read what they need from its result
inline: 132 tasks, 1.03x–1.07x the job's time on threads.

Examples
--------
>>> from operator import add
>>> graph = {"a": 1, ("chunkflow-labelmerge-up-t", 0): (add, "a", 1),
...          ("chunkflow-labelmerge-down-t", 0): (add, ("chunkflow-labelmerge-up-t", 0), 1),
...          "out": (add, ("chunkflow-labelmerge-down-t", 0), 10)}
>>> fused = fuse_merge(graph, "out")
>>> import dask
>>> dask.get(fused, "out")
13
>>> sorted(str(k) for k in fused if "fused" in str(k))
['chunkflow-labelmerge-fused-out']
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence
from typing import Any

import dask
from dask.core import get_dependencies
from dask.typing import Key

from chunkflow.graph.labels.graph import stage_prefix

__all__ = ["FUSE_BLOCKS", "fuse_merge"]

#: Up to this many blocks the merge runs as one task on a distributed cluster.
FUSE_BLOCKS = 1024

#: The merge's stages (see chunkflow.graph.labels.graph): all but the block passes.
_STAGES = ("faces", "info", "pairs", "up", "down", "hist", "dyadic", "levelsum", "offsets",
           "labelsup", "labelsdown", "total")
_PREFIXES = tuple(map(stage_prefix, _STAGES))


class _Sealed:
    """A value dask must not look into (a graph, or a result holding tuples)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _unseal(sealed: _Sealed) -> Any:
    return sealed.value


def _name(key: Hashable) -> str:
    return key[0] if isinstance(key, tuple) and isinstance(key[0], str) else str(key)


def _run(graph: _Sealed, inputs: _Sealed, outputs: _Sealed, *values: Any) -> tuple[Any, ...]:
    """The fused tasks' results for ``outputs``, their inputs given as ``values``."""
    local = dict(graph.value)
    for key, value in zip(inputs.value, values):
        local[key] = (_unseal, _Sealed(value))
    return tuple(dask.get(local, list(outputs.value)))


def _inlined(arg: Any, picks: dict[Key, int], fused_key: str) -> Any:
    """``arg`` with each merged key it reads replaced by a pick from the fused result,
    inline (a pick of its own would be a task: ~5 ms of a worker's time each)."""
    try:
        pick = picks.get(arg)
    except TypeError:  # unhashable, or hashing what it holds fails: a value, no key
        pick = None
    if pick is not None:
        return (operator.getitem, fused_key, pick)
    if type(arg) is tuple and arg and callable(arg[0]):
        return (arg[0], *(_inlined(a, picks, fused_key) for a in arg[1:]))
    if type(arg) is list:
        return [_inlined(a, picks, fused_key) for a in arg]
    return arg


def fuse_merge(graph: dict[Key, Any], key: Key) -> dict[Key, Any]:
    """``graph`` with its merge tasks replaced by one task, read by the other tasks
    (and ``key``) through picks of its result."""
    merged = {k for k in graph if _name(k).startswith(_PREFIXES)}
    if not merged:
        return graph
    needed: set[Key] = set()
    inputs: set[Key] = set()
    for k in graph:
        depends = get_dependencies(graph, k)
        if k in merged:
            inputs |= depends - merged
        else:
            needed |= depends & merged
    if key in merged:
        needed.add(key)
    outputs: Sequence[Key] = sorted(needed, key=str)
    picks = {k: i for i, k in enumerate(outputs)}
    ordered = sorted(inputs, key=str)
    fused_key = f"chunkflow-labelmerge-fused-{_name(key)}"
    fused: dict[Key, Any] = {k: _inlined(task, picks, fused_key) for k, task in graph.items()
                             if k not in merged}
    fused[fused_key] = (_run, _Sealed({k: graph[k] for k in merged}), _Sealed(ordered),
                        _Sealed(outputs), *ordered)
    if key in merged:
        fused[key] = (operator.getitem, fused_key, picks[key])
    return fused
