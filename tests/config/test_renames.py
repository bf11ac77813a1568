"""Every parameter renamed in 0.2.0 still works under its old name for one release, with
a FutureWarning naming the new one, and gives what the new name gives."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.config.renames import renamed_parameters

DATA = np.arange(24 * 20, dtype="u2").reshape(24, 20)


@pytest.fixture
def z() -> chunkflow.Array:
    return chunkflow.array(DATA, chunks=(5, 4))


def _same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif hasattr(a, "compute") and hasattr(a, "dask"):
        _same(a.compute(scheduler="sync"), b.compute(scheduler="sync"))
    elif isinstance(a, chunkflow.Array):
        np.testing.assert_array_equal(a[...], b[...])
    else:
        np.testing.assert_array_equal(a, b)


def _old_and_new(call: Callable[..., Any], old: str, new: str, value: Any) -> None:
    with pytest.warns(FutureWarning, match=rf"{old}= is renamed {new}=") as caught:
        got = call(**{old: value})
    assert caught[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        expected = call(**{new: value})
    _same(got, expected)
    with pytest.raises(TypeError, match=f"both {old}="):
        call(**{old: value, new: value})


# (function, positional arguments, old name, new name, value)
CASES: list[tuple[str, tuple[Any, ...], str, str, Any]] = [
    ("to_dask", (), "chunks", "blocks", (2, 1)),
    ("reduce", (("mean", "max"),), "chunks", "blocks", (2, 2)),
    ("reduce", (("mean",),), "memory_limit", "max_memory", "8 MiB"),
    ("reduce", (("sum",),), "compute_now", "compute", False),
    ("histogram", (5,), "chunks", "blocks", (1, 1)),
    ("histogram", (5,), "memory_limit", "max_memory", "8 MiB"),
    ("percentile", ([10, 50],), "chunks", "blocks", (1, 2)),
    ("percentile", ([10, 50],), "memory_limit", "max_memory", 2**12),
    ("quantile", (0.3,), "memory_limit", "max_memory", 2**12),
    ("nanpercentile", (50,), "chunks", "blocks", (3, 1)),
    ("nanquantile", (0.5,), "chunks", "blocks", (3, 1)),
    ("median", (), "memory_limit", "max_memory", 2**12),
    ("nanmedian", (), "chunks", "blocks", (1, 1)),
    ("summarize_chunks", (), "chunks", "blocks", (2, 2)),
]


@pytest.mark.parametrize(("name", "args", "old", "new", "value"), CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_an_old_name_warns_and_works(z: chunkflow.Array, name: str, args: tuple[Any, ...],
                                     old: str, new: str, value: Any) -> None:
    func = getattr(chunkflow, name)
    if name == "summarize_chunks":
        _old_and_new(lambda **kw: func(np.max, z, dtype=int, **kw), old, new, value)
    elif name == "to_dask":  # lazy: takes no scheduler
        _old_and_new(lambda **kw: func(z, *args, **kw), old, new, value)
    else:
        _old_and_new(lambda **kw: func(z, *args, scheduler="sync", **kw), old, new, value)


def test_the_named_reductions_and_the_array_method_take_the_old_names(
        z: chunkflow.Array) -> None:
    for op in ("mean", "std", "var", "min", "max", "sum"):
        func = getattr(chunkflow.reductions, op)
        _old_and_new(lambda f=func, **kw: f(z, scheduler="sync", **kw), "chunks", "blocks", (1, 1))
    _old_and_new(lambda **kw: z.to_dask(**kw), "chunks", "blocks", (1, 2))


def test_map_chunks_takes_chunks_for_blocks(z: chunkflow.Array) -> None:
    _old_and_new(lambda **kw: chunkflow.map_chunks(np.negative, z, dtype="i4", **kw),
                 "chunks", "blocks", (2, 2))


def test_memory_limit_warns_that_max_memory_is_one_task_s() -> None:
    with pytest.warns(FutureWarning, match="budget of one task"):
        chunkflow.reduce(chunkflow.ones(4, chunks=2), memory_limit="8 MiB", scheduler="sync")


def test_a_rename_to_a_missing_parameter_is_refused_when_decorating() -> None:
    def func(a: int, out: int = 0) -> int:
        return a + out

    with pytest.raises(TypeError, match=r"has no parameter \['outt'\]"):
        renamed_parameters(dest="outt")(func)
    assert renamed_parameters(dest="out")(func)(1, 2) == 3  # positional calls untouched


@pytest.mark.parametrize(("old", "new"), [("targets", "out"), ("regions", "selection")])
def test_store_takes_targets_and_regions(old: str, new: str) -> None:
    import dask.array as da

    source = da.from_array(DATA[2:8, :8] + 1, chunks=3)
    region = (slice(2, 8), slice(0, 8))

    def call(**kw: Any) -> np.ndarray:
        (name, _), = kw.items()  # the old or the new name of `new`
        target = chunkflow.zeros(DATA.shape, chunks=(5, 4), dtype=DATA.dtype)
        given = {"out": target, "selection": region}
        value = given.pop(new)
        chunkflow.store(source, **given, **{name: value}, scheduler="sync")
        return target[...]

    with pytest.warns(FutureWarning, match=rf"{old}= is renamed {new}="):
        got = call(**{old: None})
    np.testing.assert_array_equal(got, call(**{new: None}))
    np.testing.assert_array_equal(got[2:8, :8], DATA[2:8, :8] + 1)


def test_to_chunkflow_takes_url_or_store(tmp_path: Any) -> None:
    import dask.array as da

    x = da.from_array(DATA, chunks=(5, 7))
    with pytest.warns(FutureWarning, match="url_or_store= is renamed out="):
        old = chunkflow.to_chunkflow(x, url_or_store=str(tmp_path / "old.zarr"))
    np.testing.assert_array_equal(old[...], DATA)


@pytest.mark.parametrize("name", ["copy", "copy_all"])
def test_copy_takes_dest(name: str) -> None:
    source = chunkflow.group()
    source.create_array("x", data=DATA, chunks=(5, 5))
    what = source["x"] if name == "copy" else source
    dest = chunkflow.group()
    with pytest.warns(FutureWarning, match="dest= is renamed out="):
        counts = getattr(chunkflow, name)(what, dest=dest)
    assert counts == (1, 0, DATA.nbytes)
    np.testing.assert_array_equal(dest["x"][...], DATA)


@pytest.mark.parametrize(("old", "new", "value"), [
    ("target_chunks", "chunks", (24, 2)),
    ("target_shards", "shards", (24, 4)),
    ("region", "selection", (slice(4, 20),)),
])
def test_rechunk_takes_its_old_names(z: chunkflow.Array, old: str, new: str,
                                     value: Any) -> None:
    base: dict[str, Any] = {"chunks": (24, 2)}
    if new == "chunks":
        base = {}

    def call(**kw: Any) -> chunkflow.Array:
        return chunkflow.rechunk(z, out=chunkflow.MemoryStore(), max_memory="1 MiB",
                                 scheduler="sync", **base, **kw)

    _old_and_new(call, old, new, value)
