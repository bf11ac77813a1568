"""chunkflow.rechunk: exact copies on new chunks, one pass or through an intermediate."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
import tensorstore as ts
import zarr
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.config import byte_count
from chunkflow.errors import ContainsArrayError, InvalidSelectionError, MemoryPlanError
from chunkflow.graph.rechunk import prepare_rechunk
from chunkflow.testing import CountingMapping, CountingStore


@st.composite
def _layout(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 24)) for _ in range(ndim))
    return {
        "shape": shape,
        "source": tuple(draw(st.integers(1, n + 2)) for n in shape),
        "target": tuple(draw(st.integers(1, n + 2)) for n in shape),
        "max_memory": draw(st.integers(200, 40_000)),
        "dtype": draw(st.sampled_from(["u1", "i4", "f8"])),
    }


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_layout(), st.integers(0, 2**32 - 1))
def test_the_copy_is_exact_or_refused_without_a_trace(layout: dict[str, Any], seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 200, layout["shape"]).astype(layout["dtype"])
    source = chunkflow.array(data, chunks=layout["source"])
    out, temp = chunkflow.MemoryStore(), chunkflow.MemoryStore()
    try:
        plan = prepare_rechunk(source, layout["target"], max_memory=layout["max_memory"],
                              temp=temp, scheduler="sync")
    except MemoryPlanError:
        with pytest.raises(MemoryPlanError):
            chunkflow.rechunk(source, layout["target"], out, temp=temp, scheduler="sync",
                              max_memory=layout["max_memory"])
        assert not list(out.list_prefix("")) and not list(temp.list_prefix(""))
        return
    note(f"passes: {plan.choice.passes}")
    result = chunkflow.rechunk(source, layout["target"], out, temp=temp, scheduler="sync",
                               max_memory=layout["max_memory"])
    assert result.chunks == layout["target"]
    np.testing.assert_array_equal(chunkflow.open_array(out, mode="r")[...], data)
    assert not [k for k in temp.list_prefix("") if not k.endswith("zarr.json")]


def test_a_job_that_needs_an_intermediate_writes_and_removes_it(tmp_path: Path) -> None:
    data = np.random.default_rng(1).integers(0, 2**16, (32, 256, 256), dtype="u2")
    source = chunkflow.create_array(str(tmp_path / "src.zarr"), data=data, chunks=(1, 256, 256))
    plan = prepare_rechunk(source, (32, 32, 32), max_memory="3 MiB", temp="unused",
                          scheduler="sync")
    assert plan.choice.intermediate_chunks is not None, "this case needs two passes"
    temp = tmp_path / "temp"
    out = chunkflow.rechunk(source, (32, 32, 32), str(tmp_path / "out.zarr"),
                            max_memory="3 MiB", temp=str(temp), scheduler="threads")
    np.testing.assert_array_equal(out[...], data)
    left = [f for _, _, files in os.walk(temp) for f in files]
    assert left == [], left


@pytest.mark.parametrize("scheduler", ["sync", "processes"])
def test_compute_false_copies_when_computed_and_finishes_last(tmp_path: Path,
                                                              scheduler: str) -> None:
    data = np.random.default_rng(2).integers(0, 2**16, (32, 256, 256), dtype="u2")
    source = chunkflow.create_array(str(tmp_path / "src.zarr"), data=data, chunks=(1, 256, 256))
    temp, out = tmp_path / "temp", str(tmp_path / "out.zarr")
    lazy = chunkflow.rechunk(source, (32, 32, 32), out, max_memory="3 MiB", temp=str(temp),
                             compute=False)
    assert dask.is_dask_collection(lazy)
    # Created, marked unfinished, not written: a reader is told so.
    with pytest.warns(chunkflow.IncompleteJobWarning):
        opened = chunkflow.open_array(out, mode="r")
    assert opened.shape == data.shape and not opened[...].any()
    assert bool(lazy.compute(scheduler=scheduler)) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error", chunkflow.IncompleteJobWarning)
        done = chunkflow.open_array(out, mode="r")
    np.testing.assert_array_equal(done[...], data)
    assert [f for _, _, files in os.walk(temp) for f in files] == []  # intermediate gone


def test_commit_with_compute_false_is_refused_before_anything_is_created(
        tmp_path: Path) -> None:
    from chunkflow.errors import TransactionError

    source = chunkflow.array(np.arange(64).reshape(8, 8), chunks=(2, 8))
    with pytest.raises(TransactionError, match="compute=False"):
        chunkflow.rechunk(source, (8, 2), chunkflow.MemoryStore(), max_memory="1 MiB",
                          compute=False, commit="m")
    with pytest.raises(TransactionError, match="compute=False"):
        chunkflow.map_chunks(np.negative, source, out=str(tmp_path / "m.zarr"),
                             compute=False, commit="m")
    with pytest.raises(TransactionError, match="compute=False"):
        chunkflow.store(chunkflow.to_dask(source), chunkflow.zeros((8, 8), chunks=4),
                        compute=False, commit="m")
    image = chunkflow.array(np.zeros((64, 64), "u2"), chunks=32)
    for writer in (lambda out: chunkflow.pyramid(image, out, compute=False, commit="m"),
                   lambda out: chunkflow.label(image, out, compute=False, commit="m"),
                   lambda out: chunkflow.segment(np.sign, image, out, depth=1, compute=False,
                                                 commit="m")):
        with pytest.raises(TransactionError, match="compute=False"):
            writer(str(tmp_path / "w.zarr"))
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rechunk_without_resume_removes_its_intermediate(tmp_path: Path) -> None:
    source = chunkflow.array(np.arange(4096, dtype="u2").reshape(64, 64), chunks=(1, 64))
    temp = tmp_path / "temp"

    def stop(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chunkflow.rechunk(source, (64, 1), chunkflow.MemoryStore(), max_memory="6 KiB",
                          temp=str(temp), scheduler="sync", progress=stop)
    assert [f for _, _, files in os.walk(temp) for f in files] == []


def test_one_pass_reads_each_source_chunk_once_and_writes_each_target_chunk_once() -> None:
    data = np.arange(24 * 30, dtype="i4").reshape(24, 30)
    backend = chunkflow.MemoryStore()
    chunkflow.create_array(backend, data=data, chunks=(4, 30))
    stored = CountingStore(backend)
    out = CountingMapping()
    chunkflow.rechunk(chunkflow.open_array(stored, mode="r"), (24, 5), out,
                      max_memory="1 MiB", scheduler="threads")
    reads = {k: n for k, n in stored.counts.bytes_by_key.items() if "zarr.json" not in k}
    assert reads == {k: len(backend[k]) for k in backend.list_prefix("c/")}, reads
    assert len(out.chunk_writes()) == 6 and set(out.chunk_writes().values()) == {1}


def test_refusals_name_what_would_fit_and_create_nothing(tmp_path: Path) -> None:
    source = chunkflow.zeros((64, 512, 512), chunks=(1, 512, 512), dtype="u2")
    out, temp = tmp_path / "out.zarr", tmp_path / "temp"
    with pytest.raises(MemoryPlanError, match=r"one pass .* max_memory=.*pass temp="):
        chunkflow.rechunk(source, (64, 64, 64), str(out), max_memory="16 MiB",
                          scheduler="threads")
    with pytest.raises(MemoryPlanError, match=r"smallest tasks .* max_memory=[\d.]+ MiB would fit"):
        chunkflow.rechunk(source, (64, 64, 64), str(out), max_memory="1 MiB",
                          temp=str(temp), scheduler="threads")
    with pytest.raises(InvalidSelectionError, match="chunks names axes"):
        chunkflow.rechunk(source, {5: 2}, str(out), max_memory="1 GiB")
    with pytest.raises(InvalidSelectionError, match="unit steps"):
        chunkflow.rechunk(source, -1, str(out), max_memory="1 GiB", selection=(slice(0, 9, 2),))
    with pytest.raises(ValueError, match="max_memory"):
        chunkflow.rechunk(source, -1, str(out), max_memory="lots")
    assert os.listdir(tmp_path) == []
    chunkflow.zeros(3, store=str(out))
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        chunkflow.rechunk(source, -1, str(out), max_memory="1 GiB")


def test_v2_to_sharded_v3_with_dtype_and_codec_read_by_zarr_and_tensorstore(
        tmp_path: Path) -> None:
    data = np.random.default_rng(2).integers(0, 1000, (20, 36, 40)).astype("i4")
    source = chunkflow.create_array(str(tmp_path / "v2.zarr"), data=data, chunks=(1, 36, 40),
                                    zarr_format=2)
    location = str(tmp_path / "v3.zarr")
    chunkflow.rechunk(source, (10, 6, 8), location, shards=(20, 12, 40), dtype="f4",
                      compressors={"name": "zstd", "configuration": {"level": 3}},
                      max_memory="4 MiB", temp=str(tmp_path / "t"), scheduler="threads")
    peer = zarr.open_array(location, mode="r")
    assert peer.metadata.zarr_format == 3 and peer.shards == (20, 12, 40)
    assert peer.chunks == (10, 6, 8) and peer.dtype == np.dtype("f4")
    np.testing.assert_array_equal(peer[...], data.astype("f4"))
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": location}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), data.astype("f4"))


def test_v3_to_v2_keeps_the_compressor_and_tensorstore_reads_it(tmp_path: Path) -> None:
    data = np.arange(30 * 40, dtype="u2").reshape(30, 40)
    source = chunkflow.create_array(str(tmp_path / "a.zarr"), data=data, chunks=(30, 4),
                                    compressors={"name": "zstd", "configuration": {"level": 1}})
    location = str(tmp_path / "b.zarr")
    out = chunkflow.rechunk(source, (3, 40), location, zarr_format=2, max_memory="1 MiB")
    assert out.zarr_format == 2 and out.compressor.codec_id == "zstd"
    np.testing.assert_array_equal(zarr.open_array(location, mode="r")[...], data)
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": location}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), data)


def test_a_region_and_a_subset_of_axes(tmp_path: Path) -> None:
    data = np.random.default_rng(3).random((12, 50, 60)).astype("f4")
    source = chunkflow.array(data, chunks=(12, 7, 9))
    out = chunkflow.rechunk(source, {1: 20}, chunkflow.MemoryStore(), max_memory="1 MiB",
                            selection=(slice(2, 11), slice(5, 45)), temp=chunkflow.MemoryStore())
    assert out.shape == (9, 40, 60) and out.chunks == (12, 20, 9)
    np.testing.assert_array_equal(out[...], data[2:11, 5:45])


@pytest.mark.slow
def test_processes_and_a_local_cluster_give_the_same_array(tmp_path: Path,
                                                             cluster_client: Any) -> None:
    data = np.random.default_rng(4).integers(0, 9, (16, 64, 64), dtype="u1")
    source = chunkflow.create_array(str(tmp_path / "s.zarr"), data=data, chunks=(1, 64, 64))
    for name, scheduler in (("p", "processes"), ("c", cluster_client)):
        out = chunkflow.rechunk(str(tmp_path / "s.zarr"), (16, 8, 8), str(tmp_path / name),
                                max_memory="200 KiB", temp=str(tmp_path / f"t{name}"),
                                scheduler=scheduler)
        np.testing.assert_array_equal(out[...], data)
    assert source.nchunks_initialized == 16


def test_progress_counts_the_blocks_of_both_passes() -> None:
    source = chunkflow.array(np.arange(4096, dtype="u2").reshape(64, 64), chunks=(1, 64))
    seen: list[tuple[int, int]] = []
    plan = prepare_rechunk(source, (64, 1), max_memory="6 KiB", temp=chunkflow.MemoryStore(),
                          scheduler="sync")
    assert plan.choice.intermediate_chunks is not None
    chunkflow.rechunk(source, (64, 1), chunkflow.MemoryStore(), max_memory="6 KiB",
                      temp=chunkflow.MemoryStore(), scheduler="sync",
                      progress=lambda done, total: seen.append((done, total)))
    blocks = sum(np.prod([-(-n // b) for n, b in zip((64, 64), p.block)])
                 for p in plan.choice.passes)
    assert seen[-1] == (blocks, blocks)


@pytest.mark.slow
@pytest.mark.s3
def test_urls_on_object_storage_with_an_intermediate(s3_server: dict[str, Any]) -> None:
    import fsspec

    root = f"s3://chunkflow-test/rechunk-{os.getpid()}"
    data = np.random.default_rng(6).integers(0, 99, (16, 32, 32), dtype="u1")
    chunkflow.create_array(f"{root}/src.zarr", data=data, chunks=(1, 32, 32),
                           storage_options=s3_server)
    plan = prepare_rechunk(f"{root}/src.zarr", (16, 4, 4), max_memory="24 KiB", temp="t",
                          storage_options=s3_server, scheduler="threads")
    assert plan.choice.intermediate_chunks is not None
    out = chunkflow.rechunk(f"{root}/src.zarr", (16, 4, 4), f"{root}/out.zarr",
                            max_memory="24 KiB", temp=f"{root}/temp",
                            storage_options=s3_server, scheduler="threads")
    np.testing.assert_array_equal(out[...], data)
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server)
    assert not fs.find(f"{root}/temp")


def test_max_memory_is_one_task_s_whatever_the_threads(tmp_path: Path) -> None:
    source = chunkflow.zeros((64, 512, 512), chunks=(1, 512, 512), dtype="u2")
    with pytest.raises(MemoryPlanError, match=r"max_memory=([\d.]+ [KM]iB)") as refused:
        chunkflow.rechunk(source, (64, 64, 64), str(tmp_path / "a"), max_memory="16 MiB",
                          scheduler="sync")
    enough = refused.value.args[0].split("max_memory=")[1].split(",")[0].split(" (")[0]
    # The same per-task figure suffices on any number of threads: it is not divided.
    for scheduler in ("sync", "threads"):
        plan = prepare_rechunk(source, (64, 64, 64), max_memory=enough, scheduler=scheduler)
        assert plan.choice.intermediate_chunks is None
        assert plan.choice.task_memory <= byte_count("max_memory", enough)
