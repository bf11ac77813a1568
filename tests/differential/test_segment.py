"""chunkflow.segment against its oracle, as its documentation states it: with a
connected-components segmenter ``fn = scipy.ndimage.label(window > t, structure)``
(numbering its labels in any way, any integer dtype, values up to 2**64 - 1) and a
halo of at least 1 on every axis, the labels are ``scipy.ndimage.label(source > t,
structure)``'s, bit for bit; with no halo along some axes, blocks are never joined
across those axes: the labels are scipy's on each slab between block faces along
them, numbered by first voxel in C order."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.helpers.labels import spiral

#: How ``threshold_labels`` renumbers scipy's labels (it must not matter).
RENUMBERINGS = ("identity", "reversed", "sparse", "huge", "u2")


def threshold_labels(window: np.ndarray, threshold: float, structure: Any,
                     renumber: str) -> np.ndarray:
    """The segmenter: scipy's components of ``window > threshold``, renumbered."""
    labels, n = ndimage.label(window > threshold, structure)
    if renumber == "reversed":
        return np.where(labels > 0, n + 1 - labels, 0)
    if renumber == "sparse":
        return labels.astype(np.int64) * 1_000_003
    if renumber == "huge":  # past 2**63: compared as uint64, never as int64 or float
        return np.where(labels > 0, np.uint64(2**63) + labels.astype(np.uint64) * np.uint64(7919),
                        np.uint64(0))
    if renumber == "u2":
        return labels.astype(np.uint16)
    return labels


@dataclass
class SegmentCase:
    image: np.ndarray = field(repr=False)
    chunks: tuple[int, ...]
    blocks: tuple[int, ...]
    depth: tuple[int, ...]
    threshold: float = 0.0
    structure: Any = None
    renumber: str = "identity"
    form: str = "array"
    scheduler: str = "sync"

    def source(self) -> Any:
        if self.form == "numpy":
            return self.image
        if self.form == "dask":
            return da.from_array(self.image, chunks=self.chunks)
        return chunkflow.array(self.image, chunks=self.chunks)

    def run(self) -> tuple[Any, int]:
        return chunkflow.segment(threshold_labels, self.source(), chunkflow.MemoryStore(),
                                 depth=self.depth, chunks=self.chunks, blocks=self.blocks,
                                 scheduler=self.scheduler,
                                 threshold=self.threshold, structure=self.structure,
                                 renumber=self.renumber)


def by_first_voxel(ids: np.ndarray) -> np.ndarray:
    """``ids`` (0 background) renumbered 1, 2, ... by first voxel in C order."""
    flat = ids.reshape(-1)
    values, first = np.unique(flat, return_index=True)
    keep = values != 0
    values, first = values[keep], first[keep]
    numbers = np.zeros(len(values), np.int64)
    numbers[np.argsort(first, kind="stable")] = np.arange(1, len(values) + 1)
    result = np.zeros(flat.shape, np.int64)
    nonzero = flat != 0
    result[nonzero] = numbers[np.searchsorted(values, flat[nonzero])]
    return result.reshape(ids.shape)


def oracle(case: SegmentCase) -> tuple[np.ndarray, int]:
    image = case.image.astype(case.image.dtype.newbyteorder("="))
    mask = image > case.threshold
    if all(case.depth):
        labels, count = ndimage.label(mask, case.structure)
        return labels, int(count)
    # No halo along some axes: scipy on each slab between block faces along them.
    block = [b * c for b, c in zip(case.blocks, case.chunks)]
    ranges = [[slice(0, n)] if d else [slice(s, min(s + b, n)) for s in range(0, n, b)]
              for n, d, b in zip(mask.shape, case.depth, block)]
    ids = np.zeros(mask.shape, np.int64)
    used = 0
    for piece in itertools.product(*ranges):
        labels, count = ndimage.label(mask[piece], case.structure)
        ids[piece] = np.where(labels > 0, labels + used, 0)
        used += count
    result = by_first_voxel(ids)
    return result, int(result.max(initial=0))


@st.composite
def segment_cases(draw: st.DrawFn) -> SegmentCase:
    shapes = cst.shapes(min_dims=1, max_dims=3, max_side=9)
    use_floats = draw(st.booleans())
    image = draw(cst.intensity_images(draw(shapes)) if use_floats else cst.binary_images(shapes=shapes))
    ndim = image.ndim
    threshold = draw(st.sampled_from([-1.0, 0.0, 0.5, 1e5])) if use_floats else 0.0
    halo = st.integers(1, 2) if draw(st.booleans()) else st.integers(0, 2)
    return SegmentCase(
        image, draw(cst.chunk_shapes(image.shape)),
        draw(st.tuples(*[st.integers(1, 3)] * ndim)), draw(st.tuples(*[halo] * ndim)),
        threshold, draw(st.none() | cst.structures(ndim)), draw(st.sampled_from(RENUMBERINGS)),
        draw(st.sampled_from(["array", "array", "numpy", "dask"])),
        draw(cst.schedulers(processes=False)))


@budget(60)
@given(case=segment_cases())
@example(case=SegmentCase(spiral(9), (2, 2), (1, 1), (1, 1), renumber="huge"))
@example(case=SegmentCase(spiral(9), (2, 3), (1, 1), (1, 0), renumber="reversed",
                          structure=np.ones((3, 3), bool)))
@example(case=SegmentCase(np.indices((4, 4, 4)).sum(axis=0) % 2 == 0, (1, 1, 1), (1, 2, 1),
                          (1, 1, 1), structure=np.ones((3, 3, 3), bool), renumber="sparse",
                          scheduler="threads"))
@example(case=SegmentCase(np.array([[1, 0, 1], [0, 1, 1]], ">f8"), (1, 2), (1, 1), (2, 2),
                          threshold=0.5, form="numpy", renumber="u2"))
@example(case=SegmentCase(np.zeros((0, 3), bool), (1, 1), (1, 1), (1, 1)))
# Parts joined only across a block corner (the blocks beside it hold nothing).
@example(case=SegmentCase(np.eye(4, dtype=bool), (1, 1), (1, 1), (1, 1),
                          structure=np.ones((3, 3), bool)))
def test_segment_equals_its_oracle(case: SegmentCase) -> None:
    expected, count = oracle(case)
    labels, n = case.run()
    assert n == count
    assert labels.dtype == np.dtype("uint32")
    np.testing.assert_array_equal(labels[...], expected)
