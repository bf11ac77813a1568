"""The labelling graph: two passes over the blocks around a merge on the faces.

1. ``scan``: each block is labelled alone; its face slabs and its info are kept, and
   its labels, under the chunk cache's budget. Nothing is written.
2. ``pairs``: each block and the blocks after it (across faces, edges and corners, as
   the structure connects them) give the pairs of parts that touch, sorted by the
   merge-tree node where the two blocks meet.
3. ``up`` / ``down``: the merge tree joins exposed parts into components and hands
   each block the final key (first voxel) of each of its exposed parts
   (:mod:`chunkflow.graph.labels.merge`).
4. ``hist``, level sums, dyadic sums, ``offsets``: each block learns, per row, how
   many components of other blocks come before it (:mod:`chunkflow.graph.labels.ranks`);
   the level-0 sum is the number of labels.
5. ``create``: the output is created (or opened) for that many labels: a dtype that
   cannot hold them is refused here, before anything is written.
6. ``labels up`` / ``labels down``: the labels of components that span blocks travel
   from the block of their first voxel to the others, through the merge tree.
7. ``write``: each block's labels are numbered and written as whole chunks: the labels
   the first pass kept in the process's chunk cache, or the block labelled again where
   they are not there (:mod:`chunkflow.graph.labels.provisional`).

Tasks number about 15 per block; no task holds more than one block, the faces of a
block and its neighbours, or the components crossing one node's halves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from chunkflow.graph.labels import tasks
from chunkflow.graph.labels.provisional import drop
from chunkflow.graph.labels.ranks import dyadic_cover

if TYPE_CHECKING:
    from chunkflow.graph.labels.output import OutputHandle, OutputPlan
    from chunkflow.graph.labels.plan import LabelJob
    from chunkflow.graph.labels.tree import Box

__all__ = ["FAN_IN", "build_graph", "create_output", "finish"]

# Partial sums combined per task in the level sums.
FAN_IN = 8

Key = Hashable


def create_output(plan: OutputPlan, total: Any) -> OutputHandle:
    return plan.create(int(total))


def finish(handle: OutputHandle, total: Any, job: LabelJob, *written: bool) -> tuple[Any, int]:
    """Every block is written: the job's records and mark go, and the labels the first
    pass kept for blocks a resumed job skipped; the output and count."""
    drop(job.run, job.grid.blocks())
    if handle.tracker is not None:
        handle.tracker.finish(handle.array)
    return handle.array, int(total)


#: The stages that read a block (its two passes); every other stage is the merge's.
BLOCK_STAGES = ("scan", "write")


def stage_prefix(stage: str) -> str:
    """The start of the key names of a stage's tasks (the job's token follows).

    Examples
    --------
    >>> stage_prefix("scan"), stage_prefix("up")
    ('chunkflow-label-scan-', 'chunkflow-labelmerge-up-')
    """
    kind = "chunkflow-label" if stage in BLOCK_STAGES else "chunkflow-labelmerge"
    return f"{kind}-{stage}-"


class _Builder:
    """Adds the tasks of one labelling job to a dict graph."""

    def __init__(self, job: LabelJob, token: str) -> None:
        self.job = job
        self.token = token
        self.graph: dict[Key, Any] = {}
        self.job_key = f"chunkflow-labeljob-{token}"
        self.graph[self.job_key] = job
        self.tree = job.tree
        self.blocks = job.grid.blocks()
        self.names = {stage: self.name(stage) for stage in (
            "scan", "faces", "info", "pairs", "up", "down", "hist", "offsets", "labelsup",
            "labelsdown", "write")}

    def name(self, stage: str) -> str:
        return f"{stage_prefix(stage)}{self.token}"

    def key(self, stage: str, *parts: Any) -> Key:
        """A task's key: the stage's name and the parts (ints, or tuples of them) flat."""
        flat: list[int] = []
        for part in parts:
            flat.extend(part if isinstance(part, tuple) else (part,))
        return (self.name(stage), *flat)

    def block(self, stage: str, index: tuple[int, ...]) -> Key:
        return (self.names[stage], *index)

    def node(self, stage: str, box: Box) -> Key:
        return (self.names[stage], *box[0], *box[1])

    def add(self, key: Key, *task: Any) -> Key:
        self.graph[key] = task
        return key

    # -------------------------------------------------------------- first pass
    def scan(self) -> None:
        job = self.job_key
        for b in self.blocks:
            scanned = self.add(self.block("scan", b), tasks.scan, job, b)
            self.add(self.block("faces", b), tasks.pick, scanned, 0)
            self.add(self.block("info", b), tasks.pick, scanned, 1)
        self.meets: dict[Box, list[Key]] = defaultdict(list)
        for b in self.blocks:
            near = self.job.neighbours(b)
            if not near:
                continue
            others = [tuple(i + d for i, d in zip(b, o)) for o, _ in near]
            key = self.add(self.block("pairs", b), tasks.pairs, job, b, self.block("faces", b),
                           *[self.block("faces", other) for other in others])
            for box in {self.tree.common(b, other) for other in others}:
                self.meets[box].append(key)

    # ------------------------------------------------------------------ merge
    def merge(self) -> None:
        for box in self.tree.nodes:
            low, high = self.tree.children(box)
            self.add(self.node("up", box), tasks.up, self.job_key, box, self.up_key(low),
                     self.up_key(high), *self.meets.get(box, []))
        for box in reversed(self.tree.nodes):  # parents first
            parent = self.tree.parents.get(box)
            self.add(self.node("down", box), tasks.down, self.node("up", box),
                     self.node("down", parent) if parent else None)

    def up_key(self, box: Box) -> Key:
        """A node's way up, or a block's info (a leaf is its own state)."""
        return self.node("up", box) if self.tree.children(box) else self.block("info", box[0])

    def finals(self, b: tuple[int, ...]) -> Key | None:
        """The key of the final keys a block's exposed parts get (``None``: one block)."""
        parent = self.tree.parents.get(self.tree.leaf(b))
        return self.node("down", parent) if parent else None

    # -------------------------------------------------------------- numbering
    def numbering(self) -> Key:
        ndim = self.job.grid.ndim
        for b in self.blocks:
            self.add(self.block("hist", b), tasks.hist, self.job_key, b, self.block("info", b),
                     self.finals(b))
        self.level_sums: dict[tuple[int, tuple[int, ...]], Key] = {}
        for d in range(ndim):
            groups: dict[tuple[int, ...], list[Key]] = defaultdict(list)
            for b in self.blocks:
                groups[b[:d + 1]].append(self.block("hist", b))
            for prefix, hists in groups.items():
                # One block: its hist itself (tasks take the level they need).
                self.level_sums[(d, prefix)] = (hists[0] if len(hists) == 1
                                                else self._tree_sum(d, prefix, hists))
        numblocks = self.job.grid.numblocks
        for b in self.blocks:
            arrays: list[Key] = []
            counts = []
            for d in range(ndim):
                before = self._cover(d, b[:d], 0, b[d])
                after = self._cover(d, b[:d], b[d] + 1, numblocks[d])
                arrays += before + after
                counts.append((len(before), len(after)))
            self.add(self.block("offsets", b), tasks.offsets, self.job_key, b, self.block("info", b),
                     self.finals(b), counts, *arrays)
        total = self._cover(0, (), 0, numblocks[0])
        return self.add(self.key("total"), tasks.sum_level, 0, *total)

    def _tree_sum(self, level: int, prefix: tuple[int, ...], hists: list[Key]) -> Key:
        name = ("levelsum", level, prefix)
        layer = [self.add(self.key(*name, 0, i), tasks.sum_level, level, *hists[i:i + FAN_IN])
                 for i in range(0, len(hists), FAN_IN)]
        depth = 0
        while len(layer) > 1:
            depth += 1
            layer = [self.add(self.key(*name, depth, i), tasks.sum_level, level,
                              *layer[i:i + FAN_IN])
                     for i in range(0, len(layer), FAN_IN)]
        return layer[0]

    def _dyadic(self, level: int, line: tuple[int, ...], size: int, m: int) -> Key:
        if size == 0:
            return self.level_sums[(level, (*line, m))]
        key = self.key("dyadic", level, line, size, m)
        if key not in self.graph:
            self.add(key, tasks.sum_level, level, self._dyadic(level, line, size - 1, 2 * m),
                     self._dyadic(level, line, size - 1, 2 * m + 1))
        return key

    def _cover(self, level: int, line: tuple[int, ...], start: int, stop: int) -> list[Key]:
        return [self._dyadic(level, line, size, m) for size, m in dyadic_cover(start, stop)]

    # ---------------------------------------------------------------- labels
    def labels(self) -> None:
        up: dict[Box, Key] = {self.tree.leaf(b): self.block("offsets", b) for b in self.blocks}
        for box in self.tree.nodes:
            parent = self.tree.parents.get(box)
            if parent is None:
                continue
            low, high = self.tree.children(box)
            up[box] = self.add(self.node("labelsup", box), tasks.labelled_up,
                               self.node("up", box), self.node("down", parent), up[low], up[high])
        for box in reversed(self.tree.nodes):
            parent = self.tree.parents.get(box)
            low, high = self.tree.children(box)
            self.add(self.node("labelsdown", box), tasks.labelled_down, self.node("down", box),
                     self.node("labelsdown", parent) if parent else None, up[low], up[high])

    def known(self, b: tuple[int, ...]) -> Key | None:
        parent = self.tree.parents.get(self.tree.leaf(b))
        return self.node("labelsdown", parent) if parent else None

    # ----------------------------------------------------------------- write
    def write(self, output: OutputPlan, total: Key) -> Key:
        created = self.add(self.key("create"), create_output, output, total)
        written = [self.add(self.block("write", b), tasks.write, self.job_key, b, created,
                            self.block("info", b), self.finals(b), self.known(b),
                            self.block("offsets", b))
                   for b in self.blocks]
        return self.add(self.key("done"), finish, created, total, self.job_key, *written)


def build_graph(job: LabelJob, output: OutputPlan, token: str) -> tuple[dict[Key, Any], Key]:
    """The whole graph of a labelling job and the key of its result ``(array, count)``."""
    builder = _Builder(job, token)
    builder.scan()
    builder.merge()
    total = builder.numbering()
    builder.labels()
    return builder.graph, builder.write(output, total)
