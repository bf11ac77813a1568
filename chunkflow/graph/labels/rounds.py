"""A labelling job in two rounds, for an output created in an Icechunk session on a
cluster (see :mod:`chunkflow.graph.forked`).

The output is created once the number of labels is known (its dtype must hold them), by
a task. Through forks of an Icechunk session that task would create it in its own
worker's fork only, and the write tasks of the other workers would find no array. So:

1. every task the writes need (the scan, the merge, the numbering) runs first, its
   results kept on the cluster;
2. the client creates the output for that many labels, in the session, and
   :func:`~chunkflow.graph.forked.settle` carries it into the fork the workers start
   the second round from;
3. the write tasks run, handed the output made on the client.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from dask.delayed import Delayed

from chunkflow.graph.forked import settle
from chunkflow.graph.labels.graph import create_output
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from chunkflow.graph.labels.output import OutputPlan

__all__ = ["run_in_rounds"]


def _keys_in(task: Any, graph: Mapping[Hashable, Any]) -> set[Hashable]:
    """The keys of ``graph`` that ``task`` (a tuple) names among its arguments."""
    found: set[Hashable] = set()
    for argument in task[1:] if isinstance(task, tuple) else ():
        try:
            if argument in graph:
                found.add(argument)
        except TypeError:  # an unhashable argument (a list): no key
            continue
    return found


def run_in_rounds(graph: dict[Hashable, Any], key: Hashable, output: OutputPlan,
                  client: Any, progress: ProgressArg) -> tuple[Any, ...]:
    """Compute ``graph`` (its result at ``key``) on ``client`` in the two rounds of the
    module; the result of :func:`~chunkflow.graph.scheduler.compute`."""
    create = next(k for k, task in graph.items()
                  if isinstance(task, tuple) and task[:1] == (create_output,))
    total_key = graph[create][2]
    # The second round: the writes (every task taking the output) and the last task.
    second = {k: task for k, task in graph.items()
              if k == key or (k != create and create in _keys_in(task, graph))}
    first = {k: task for k, task in graph.items() if k not in second and k != create}
    needed = sorted({k for task in second.values() for k in _keys_in(task, first)}
                    | {total_key}, key=repr)
    futures = dict(zip(needed, client.get(first, needed, sync=False)))
    handle = output.create(int(futures[total_key].result()))  # in the session
    settle()  # the output goes into the fork the writes start from
    return run(Delayed(key, {**second, **futures, create: handle}), scheduler=client,
               progress=progress)
