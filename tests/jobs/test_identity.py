"""A job's identity is built in one place: every resumable writer names its job with
job_identity, and the identity changes exactly when what the job computes changes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main
from chunkflow.errors import JobMismatchError, JobTokenError
from chunkflow.jobs import (
    JobSpec,
    check_same_output,
    function_parts,
    identity,
    job_identity,
    source_parts,
)


def _source(path: Path) -> chunkflow.Array:
    data = np.arange(16 * 12, dtype="u2").reshape(16, 12)
    return chunkflow.array(data, chunks=(4, 4), store=str(path))


def test_the_same_job_has_the_same_token_and_a_change_names_its_part(tmp_path: Path) -> None:
    src = _source(tmp_path / "src.zarr")
    out = chunkflow.zeros((16, 12), chunks=(4, 4), dtype="f4")

    def spec(**changes: Any) -> JobSpec:
        args: dict[str, Any] = {"plan": {"block plan": (4, 4)}, "sources": [src],
                                "function": function_parts(np.sqrt, {"k": 1}, None)}
        return job_identity(changes.pop("out", out), **{**args, **changes})

    assert spec().token == spec().token
    other_out = chunkflow.zeros((16, 12), chunks=(8, 4), dtype="f4")
    assert spec(out=other_out).changes(spec().parts) == ["output metadata"]
    assert spec(plan={"block plan": (8, 4)}).changes(spec().parts) == ["block plan"]
    cos = function_parts(np.cos, {"k": 1}, None)
    assert spec(function=cos).changes(spec().parts) == ["function"]
    src[0, 0] = 7  # one more stored chunk: another stored size
    assert spec().changes(spec(sources=[]).parts) == [
        "source 0 ('/')", "source 0 ('/') stored bytes"]


def test_a_plan_given_as_text_is_kept_and_anything_else_tokenized() -> None:
    out = chunkflow.zeros(4, chunks=2)
    parts = job_identity(out, plan={"slab plan": "[(0, 4)]", "block plan": (2,)}).parts
    assert parts["slab plan"] == "[(0, 4)]"
    assert parts["block plan"] != str((2,)) and len(parts["block plan"]) == 32


def test_a_source_in_memory_is_described_and_the_output_itself_not_listed() -> None:
    out = chunkflow.zeros((4, 4), chunks=(2, 2))
    described = source_parts([np.zeros((3, 2), "i2"), out], out)
    assert described["source 0"] == "ndarray (3, 2) int16"
    assert [k for k in described if "stored bytes" in k] == []  # the output changes


def test_job_name_stands_in_for_an_untokenizable_function() -> None:
    lock = threading.Lock()  # not picklable: no deterministic token
    with pytest.raises(JobTokenError, match="job_name"):
        function_parts(np.sqrt, {"guard": lock}, None)
    assert function_parts(np.sqrt, {"guard": lock}, "my job") == {}
    with pytest.raises(JobTokenError, match="non-empty"):
        function_parts(np.sqrt, {}, "")


def test_another_output_metadata_is_refused_naming_it() -> None:
    check_same_output(chunkflow.zeros(4, chunks=2), chunkflow.zeros(4, chunks=2), "x", "")
    with pytest.raises(JobMismatchError, match="'out' is the unfinished output.*start over"):
        check_same_output(chunkflow.zeros(4, chunks=2), chunkflow.zeros(4, chunks=2,
                                                                         dtype="u1"),
                          repr("out"), "start over")


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[JobSpec]:
    """The specs job_identity builds (it is the only builder of a tracked job's spec)."""
    specs: list[JobSpec] = []

    class Recorded(JobSpec):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            specs.append(self)

    monkeypatch.setattr(identity, "JobSpec", Recorded)
    return specs


def _writers(tmp_path: Path) -> dict[str, Any]:
    src = _source(tmp_path / "src.zarr")
    image = chunkflow.array(np.zeros((64, 64), "u1"), chunks=(16, 16),
                            store=str(tmp_path / "image.zarr"))
    return {
        "map_chunks": lambda: chunkflow.map_chunks(
            np.sqrt, src, out=str(tmp_path / "map.zarr"), dtype="f4", resume=True,
            scheduler="sync"),
        "store": lambda: chunkflow.store(
            da.ones((16, 12), chunks=4), chunkflow.zeros((16, 12), chunks=(4, 4),
                                                         store=str(tmp_path / "st.zarr")),
            resume=True, scheduler="sync"),
        "to_chunkflow": lambda: chunkflow.to_chunkflow(
            da.ones((16, 12), chunks=4), str(tmp_path / "tc.zarr"), resume=True,
            scheduler="sync"),
        "rechunk": lambda: chunkflow.rechunk(
            src, (16, 1), str(tmp_path / "re.zarr"), max_memory="1 MiB", resume=True,
            scheduler="sync"),
        "pyramid": lambda: chunkflow.pyramid(
            image, str(tmp_path / "pyr.zarr"), resume=True, scheduler="sync"),
        "copy": lambda: chunkflow.copy(src, chunkflow.group(str(tmp_path / "cp.zarr")), "x",
                                       resume=True),
        "cli copy": lambda: main(["copy", str(tmp_path / "src.zarr"),
                                  str(tmp_path / "cli.zarr"), "--resume"]),
        "label": lambda: chunkflow.label(src, str(tmp_path / "lab.zarr"), resume=True,
                                         scheduler="sync"),
    }


@pytest.mark.parametrize("writer", ["map_chunks", "store", "to_chunkflow", "rechunk",
                                    "pyramid", "copy", "cli copy", "label"])
def test_every_resumable_writer_names_its_job_with_job_identity(
        tmp_path: Path, built: list[JobSpec], writer: str) -> None:
    _writers(tmp_path)[writer]()
    assert built, f"{writer} resumed without job_identity"
    for spec in built:
        assert "output metadata" in spec.parts
        assert len(spec.token) == 32
