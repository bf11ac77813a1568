"""A convert killed mid-way (SIGKILL, in a subprocess) resumes bit-identical."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ContainsGroupError, JobMismatchError

tifffile = pytest.importorskip("tifffile")

ROOT = Path(__file__).resolve().parents[2]

# Kills itself (SIGKILL: no cleanup runs) once half of the tasks are done.
KILLED = textwrap.dedent("""
    import os, signal, sys
    import chunkflow

    def progress(done, total):
        if total > 1 and done >= total // 2:
            os.kill(os.getpid(), signal.SIGKILL)

    chunkflow.convert(sys.argv[1], sys.argv[2], chunks=(2, 8, 8), shards=(2, 16, 16),
                      levels=4, max_memory=sys.argv[3], scheduler="sync", progress=progress)
""")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _stack(folder: Path) -> str:
    rng = np.random.default_rng(7)
    for i in range(12):
        tifffile.imwrite(folder / f"z{i:02d}.tif", rng.integers(0, 60000, (70, 90), dtype="u2"))
    return str(folder / "z*.tif")


@pytest.mark.parametrize("max_memory", ["1 GiB", "200 KiB"])  # one stage; a stage per level
def test_a_killed_convert_resumes_bit_identical(tmp_path, max_memory, caplog) -> None:
    source = _stack(tmp_path)
    killed, fresh = tmp_path / "killed.zarr", tmp_path / "fresh.zarr"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([sys.executable, "-c", KILLED, source, str(killed), max_memory],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == -9, run.stderr  # killed, not finished
    levels = chunkflow.open_group(killed, mode="r")
    assert "ome" not in levels.attrs  # no image until every level is written
    with pytest.raises(ContainsGroupError, match="resume=True"):
        chunkflow.convert(source, killed, chunks=(2, 8, 8), shards=(2, 16, 16), levels=4)
    with pytest.raises(JobMismatchError):  # another layout is another job
        chunkflow.convert(source, killed, chunks=(1, 8, 8), shards=(2, 16, 16), levels=4,
                          max_memory=max_memory, resume=True)
    statuses = [chunkflow.job_status(a) for _, a in levels.arrays()]
    done = sum(s.done for s in statuses if s is not None)
    assert done > 0  # the killed run recorded tasks that a resume skips
    with caplog.at_level("INFO", logger="chunkflow.jobs"):
        chunkflow.convert(source, killed, chunks=(2, 8, 8), shards=(2, 16, 16), levels=4,
                          max_memory=max_memory, resume=True)
    assert f"resuming, {done} of" in caplog.text  # the tasks done before were skipped
    chunkflow.convert(source, fresh, chunks=(2, 8, 8), shards=(2, 16, 16), levels=4,
                      max_memory=max_memory)
    assert _files(killed) == _files(fresh)  # every shard, document and attribute
    assert all(chunkflow.job_status(a) is None
               for _, a in chunkflow.open_group(killed, mode="r").arrays())
