"""chunkflow.label against scipy.ndimage.label on the whole array: the same labels bit
for bit (numbering included) and the same count, for any image, chunk grid, block
plan, structure, output dtype and scheduler; a refusal wherever scipy refuses.

Blocks are labelled by cc3d where it is installed and implements the structure
(chunkflow.graph.labels.local), by scipy otherwise: the tests with a ``labeller``
parameter run both ways ("scipy" forces scipy's path)."""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import LabelError
from chunkflow.graph.labels.local import cc3d_available, cc3d_connectivity, scipy_only
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.helpers.labels import spiral


@dataclass
class Case:
    """One labelling: the image, how it is stored and handed over, and the options."""

    image: np.ndarray = field(repr=False)
    chunks: tuple[int, ...]
    zarr_format: int = 3
    form: str = "array"  # "array", "numpy", "lazy" (a dask expression) or "dask"
    structure: Any = None
    blocks: tuple[int, ...] | None = None
    dtype: Any = None
    scheduler: str = "sync"

    def source(self, store: Any = None) -> Any:
        if self.form == "numpy":
            return self.image
        if self.form == "dask":
            return da.from_array(self.image, chunks=self.chunks)
        z = chunkflow.array(self.image, chunks=self.chunks, zarr_format=self.zarr_format,
                            store=store)
        return chunkflow.to_dask(z) != 0 if self.form == "lazy" else z


@st.composite
def _floats(draw: st.DrawFn, shapes: st.SearchStrategy[tuple[int, ...]]) -> np.ndarray:
    """Floats (NaN, ±inf, subnormals: foreground) where a binary image is set, 0.0 or
    -0.0 (background) elsewhere; float16 is refused (scipy refuses it too)."""
    mask = draw(cst.binary_images(shapes=shapes))
    values = draw(cst.intensity_images(mask.shape, dtypes=cst.dtypes(codes=["f4", "f8"],
                                                                      byteorder="any")))
    zero = draw(st.sampled_from([0.0, -0.0]))
    return np.where(mask, values, values.dtype.type(zero)).astype(values.dtype)


@st.composite
def cases(draw: st.DrawFn, max_dims: int = 4, max_side: int = 9) -> Case:
    # Mostly 2-D or more without zero-length sides (one_of would merge repeats: a
    # weighted pick instead).
    shapes = (cst.shapes(min_dims=1, max_dims=max_dims, max_side=max_side)
              if draw(st.integers(0, 2)) == 0 else
              cst.shapes(min_dims=2, max_dims=max_dims, max_side=max_side, zero_sides=False))
    image = draw(st.one_of(
        cst.label_images(shapes=shapes, dtypes=cst.dtypes(kinds="iub", byteorder="any")),
        cst.binary_images(shapes=shapes), _floats(shapes)))
    ndim = image.ndim
    # Mostly several chunks per side: objects then cross chunk faces, edges and corners.
    chunks = (cst.chunk_shapes(image.shape) if draw(st.integers(0, 2)) == 0 else
              st.tuples(*[st.integers(1, max(1, (n + 1) // 2)) for n in image.shape]))
    blocks = st.tuples(*[st.integers(1, 3)] * ndim)
    return Case(
        image, draw(chunks), draw(cst.zarr_formats()),
        draw(st.sampled_from(["array", "array", "numpy", "lazy", "dask"])),
        draw(st.none() if draw(st.integers(0, 2)) == 0 else cst.structures(ndim)),
        # Mostly small blocks (the default plan often makes one block of these images).
        draw(st.none() if draw(st.integers(0, 3)) == 0 else blocks),
        draw(st.none() | cst.dtypes(kinds="iu", byteorder="any")),
        draw(cst.schedulers(processes=False)))


def scipy_label(case: Case) -> tuple[np.ndarray, int]:
    """The oracle: scipy on the native-order values (it takes no other byte order)."""
    image = case.image.astype(case.image.dtype.newbyteorder("="))
    output = None if case.dtype is None else np.dtype(case.dtype).newbyteorder("=")
    labels, count = ndimage.label(image, case.structure, output=output)
    return labels, int(count)


def labelling(labeller: str) -> Any:
    """Where jobs label with scipy only ("scipy"), as planned ("auto": cc3d where it
    may, when installed; the write pass takes the labels the first pass kept), or as
    planned with no chunk cache ("relabelled": the write pass labels each block
    again)."""
    if labeller == "relabelled":
        return chunkflow.config.set({"chunkflow.cache.max-bytes": 0})
    return scipy_only() if labeller == "scipy" else contextlib.nullcontext()


def check(case: Case, store: Any = None, out: Any = None) -> None:
    try:
        expected, count = scipy_label(case)
    except RuntimeError as error:  # scipy: "insufficient bit-depth in requested output type"
        assert "bit-depth" in str(error)
        with pytest.raises(LabelError, match="do not fit dtype"):
            chunkflow.label(case.source(store), out or chunkflow.MemoryStore(),
                            structure=case.structure, dtype=case.dtype, blocks=case.blocks,
                            scheduler=case.scheduler)
        return
    labels, n = chunkflow.label(case.source(store), out or chunkflow.MemoryStore(),
                                structure=case.structure, dtype=case.dtype, blocks=case.blocks,
                                scheduler=case.scheduler)
    assert n == count
    assert labels.shape == expected.shape
    # A Zarr v3 array's dtype has no byte order (its bytes codec has): compared native.
    wanted = np.dtype("uint32") if case.dtype is None else np.dtype(case.dtype)
    assert labels.dtype.newbyteorder("=") == wanted.newbyteorder("=")
    np.testing.assert_array_equal(labels[...], expected)


@budget(75)  # per labeller: 150 in all
@given(case=cases())
# The named cases of issue 34: a big-endian v2 array, and a numpy array, refused before.
@example(case=Case(np.array([[1, 0, 1], [0, 1, 1]], ">i4"), (1, 2), zarr_format=2))
@example(case=Case(np.array([[1, 0, 1], [0, 1, 1]], ">f8"), (1, 2), form="numpy"))
@example(case=Case(np.array([[1, 0, 1], [0, 1, 1]]), (1, 2), form="numpy",
                   structure=np.ones((3, 3)).tolist()))
# Objects crossing every chunk of 1, under full connectivity, in 4-D.
@example(case=Case(np.indices((3, 3, 3, 3)).sum(axis=0) % 2 == 0, (1, 1, 1, 1),
                   structure=np.ones((3,) * 4, bool), blocks=(1, 1, 1, 1), scheduler="threads"))
@example(case=Case(spiral(9), (1, 1), blocks=(2, 3)))
# Labels of a uint64 image past 2**63 are foreground like any other nonzero value.
@example(case=Case(np.array([1, 2**63 + 5, 0, 2**64 - 1], "u8"), (1,), dtype="u1"))
# Zero-length axes, an output dtype too small for the labels.
@example(case=Case(np.zeros((3, 0, 2), bool), (1, 1, 1)))
@example(case=Case(np.tile([1, 0], 200), (7,), dtype="i1"))
@pytest.mark.parametrize("labeller", ["auto", "scipy"])
def test_label_equals_scipy(case: Case, labeller: str) -> None:
    with labelling(labeller):
        check(case)


@st.composite
def cc3d_cases(draw: st.DrawFn) -> Case:
    """Blocks cc3d labels (2-D or 3-D, at most one side under 4, a structure it
    implements), of several blocks, so that its numbering meets the merge's."""
    ndim = draw(st.integers(2, 3))
    shape = draw(st.tuples(*[st.integers(4, 24 if ndim == 2 else 12)] * ndim))
    image = draw(cst.binary_images(shapes=st.just(shape)))
    rank = draw(st.integers(1, ndim))
    structure = draw(st.sampled_from([None, ndimage.generate_binary_structure(ndim, rank).tolist()]))
    chunks = tuple(draw(st.integers(4, max(4, n // 2 + 1))) for n in shape)
    return Case(image, chunks, structure=structure, blocks=(1,) * ndim,
                scheduler=draw(cst.schedulers(processes=False)))


@budget(10)
@given(case=cc3d_cases())
@example(case=Case(np.array([[0, 0, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 1, 0, 1],
                             [0, 1, 1, 1, 1]], bool), (4, 5), structure=np.ones((3, 3)).tolist(),
                   blocks=(1, 1)))
@pytest.mark.parametrize("labeller", ["auto", "scipy", "relabelled"])
def test_label_equals_scipy_on_blocks_cc3d_labels(case: Case, labeller: str) -> None:
    with labelling(labeller):
        check(case)


@pytest.mark.skipif(not cc3d_available(), reason="cc3d (connected-components-3d) not installed")
def test_label_plans_cc3d_where_it_may_and_scipy_when_forced() -> None:
    full2 = ndimage.generate_binary_structure(2, 2)
    assert [cc3d_connectivity(ndimage.generate_binary_structure(3, r))
            for r in (1, 2, 3)] == [6, 18, 26]
    assert cc3d_connectivity(full2) is None  # 2-D: scipy, which releases the GIL
    assert cc3d_connectivity(np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]], bool)) is None
    with scipy_only():
        assert cc3d_connectivity(ndimage.generate_binary_structure(3, 3)) is None


def blocks(case: Case) -> int:
    """How many blocks ``case`` labels (0: the default plan)."""
    if case.blocks is None:
        return 0
    return int(np.prod([-(-n // (c * b)) for n, c, b in zip(case.image.shape, case.chunks,
                                                             case.blocks)]))


@budget(1)  # a process pool per example, a few tasks per block: seconds each
@given(case=cases(max_dims=3, max_side=7).filter(lambda c: c.form == "array" and 2 <= blocks(c) <= 4))
def test_label_on_processes_from_and_to_folders(case: Case) -> None:
    case.scheduler = "processes"
    with tempfile.TemporaryDirectory() as folder:
        check(case, store=f"{folder}/source.zarr", out=f"{folder}/labels.zarr")


@st.composite
def refused_structures(draw: st.DrawFn) -> tuple[np.ndarray, Any]:
    # scipy checks symmetry only when it labels something: on an empty image it takes
    # an asymmetric structure, which chunkflow refuses anyway (the only place where it
    # refuses and scipy does not).
    image = draw(cst.binary_images(shapes=cst.shapes(min_dims=1, max_dims=3, max_side=5,
                                                     zero_sides=False)))
    ndim = image.ndim
    kind = draw(st.sampled_from(["asymmetric", "rank", "size"]))
    if kind == "rank":
        shape = (3,) * draw(st.integers(1, 4).filter(lambda n: n != ndim))
    elif kind == "size":
        shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=ndim, max_size=ndim)
                           .filter(lambda s: any(n != 3 for n in s))))
    else:
        shape = (3,) * ndim
    bits = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape)))), bool).reshape(shape)
    if kind == "asymmetric":
        flipped = bits[(slice(None, None, -1),) * ndim]
        if np.array_equal(bits, flipped):  # make it asymmetric: one voxel without its mirror
            bits.flat[0], bits.flat[-1] = True, False
    return image, bits


@budget(15)
@given(case=refused_structures())
@example(case=(np.ones((4, 4), bool), np.array([[0, 1, 0], [0, 1, 1], [0, 0, 0]], bool)))
def test_label_refuses_the_structures_scipy_refuses(case: tuple[np.ndarray, Any]) -> None:
    image, structure = case
    # scipy raises AssertionError (asymmetric), RuntimeError (rank) or ValueError
    # (size); chunkflow raises LabelError, a ValueError, naming what is expected.
    with pytest.raises((AssertionError, RuntimeError, ValueError)):
        ndimage.label(image, structure)
    with pytest.raises(LabelError, match="structure"):
        chunkflow.label(image, chunkflow.MemoryStore(), structure=structure)


@budget(6)
@given(image=cst.arrays(cst.dtypes(codes=["f2", "c8", "c16", "m8[s]", "M8[s]", "U1", "U5"],
                                   byteorder="any"),
                        # scipy checks the dtype only when it labels something (an
                        # empty array of any dtype gives 0 labels); chunkflow refuses
                        # anyway, saying what to label instead.
                        cst.shapes(min_dims=1, max_dims=3, max_side=4, zero_sides=False)),
       form=st.sampled_from(["numpy", "dask"]))
@example(image=np.array([1, 0, 1], "c8"), form="numpy")
def test_label_refuses_the_dtypes_scipy_refuses(image: np.ndarray, form: str) -> None:
    native = image.astype(image.dtype.newbyteorder("="))
    with pytest.raises(TypeError):
        ndimage.label(native)
    source = image if form == "numpy" else da.from_array(image)
    with pytest.raises(TypeError, match="not labelled"):
        chunkflow.label(source, chunkflow.MemoryStore())
