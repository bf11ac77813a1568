"""On a distributed cluster, each block's two passes on the same worker.

The first pass of a labelling job keeps each block's labels in the process that
labelled it (:mod:`chunkflow.graph.labels.provisional`); the write pass finds them
there, or reads and labels the block again. dask's scheduler places the write of a
block by where its small inputs happen to be and by load, so on two workers about
half the writes ran where the block had not been labelled (16384² in 1024² blocks:
29 of 64 labelled twice). Here each block's scan and write are annotated with one
worker, contiguous runs of blocks per worker in proportion to its threads, as
*loose* restrictions (``allow_other_workers``): when that worker is gone, any
other runs them (and labels the block again, with the same result).

Restricted tasks never go to a worker that joins later, so blocks are placed only
where the client's own cluster object shows a fixed set of workers (a ``LocalCluster``,
any ``SpecCluster``, that is not adapting). On an adaptive cluster, or through a client
that knows only the scheduler's address, dask places the blocks as before.

Examples
--------
>>> workers = {"tcp://a:1": 1, "tcp://b:2": 3}
>>> owners = block_owners([(i,) for i in range(8)], workers)
>>> [owners[(i,)] for i in range(8)]
['tcp://a:1', 'tcp://a:1', 'tcp://b:2', 'tcp://b:2', 'tcp://b:2', 'tcp://b:2', 'tcp://b:2', 'tcp://b:2']
>>> block_of(("chunkflow-label-write-abc", 2, 3)), block_of(("chunkflow-labelmerge-up-abc", 1))
((2, 3), None)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from chunkflow.graph.labels.graph import BLOCK_STAGES, stage_prefix

__all__ = ["block_of", "block_owners", "fixed_workers", "placed"]

_PLACED = tuple(map(stage_prefix, BLOCK_STAGES))


def block_of(key: Hashable) -> tuple[int, ...] | None:
    """The block index of a scan or write task's key, else None."""
    if isinstance(key, tuple) and isinstance(key[0], str) and key[0].startswith(_PLACED):
        return tuple(key[1:])
    return None


def block_owners(blocks: Sequence[tuple[int, ...]],
                 threads: Mapping[str, int]) -> dict[tuple[int, ...], str]:
    """Each block's worker: ``blocks`` in order, cut into contiguous runs, one per
    worker (sorted by address), as long as its share of the ``threads``."""
    workers = sorted(threads)
    total = sum(max(threads[w], 1) for w in workers)
    owners: dict[tuple[int, ...], str] = {}
    start, taken = 0, 0
    for worker in workers:
        taken += max(threads[worker], 1)
        stop = round(len(blocks) * taken / total)
        for block in blocks[start:stop]:
            owners[block] = worker
        start = stop
    return owners


def fixed_workers(client: Any) -> bool:
    """Whether ``client``'s cluster is an object of this process that is not adapting
    (its workers now are its workers for the job)."""
    cluster = getattr(client, "cluster", None)
    return cluster is not None and getattr(cluster, "_adaptive", None) is None


def placed(graph: dict[Hashable, Any], key: Hashable, client: Any) -> Delayed:
    """``Delayed(key, graph)`` with each block's scan and write annotated with the
    worker of :func:`block_owners` (loosely), for ``client``'s workers now; as it is
    unless the cluster's workers are fixed (:func:`fixed_workers`)."""
    if not fixed_workers(client):
        return Delayed(key, graph)
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]  # every worker
    except TypeError:  # distributed before n_workers= lists them all
        workers = client.scheduler_info()["workers"]
    threads = {address: int(info.get("nthreads", 1)) for address, info in workers.items()}
    blocks = sorted({block for block in map(block_of, graph) if block is not None})
    if len(threads) < 2 or not blocks:
        return Delayed(key, graph)
    owners = block_owners(blocks, threads)

    def worker(task: Hashable) -> list[str] | None:
        block = block_of(task)
        return None if block is None else [owners[block]]

    def loose(task: Hashable) -> bool | None:
        return None if block_of(task) is None else True

    def priority(task: Hashable) -> int | None:
        # The merge's small tasks first: a worker busy with block after block would
        # otherwise hold up the chain of merges every block's write waits for.
        return 1 if block_of(task) is None else None

    name = f"chunkflow-label-placed-{key[0] if isinstance(key, tuple) else key}"
    layer = MaterializedLayer(graph, annotations={"workers": worker,
                                                  "allow_other_workers": loose,
                                                  "priority": priority})
    return Delayed(key, HighLevelGraph({name: layer}, {name: set()}), layer=name)
