"""``verify`` on a dask cluster (a LocalCluster of worker processes) and the command
``chunkflow verify`` run as a user runs it (exit status 0 when clean, 1 otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkflow

ROOT = Path(__file__).resolve().parents[2]  # the tree whose chunkflow is under test


def damaged(folder: Path) -> tuple[chunkflow.Array, chunkflow.Array]:
    """A group with a clean array ``ok`` and an array ``bad``: one corrupt chunk, one
    stray file, one chunk its finished job stored and that is gone."""
    root = chunkflow.group(str(folder / "g.zarr"))
    values = np.arange(64 * 48, dtype="u2").reshape(64, 48) + 1
    ok = root.create_array("ok", data=values, chunks=(16, 16))
    bad = chunkflow.map_chunks(np.negative, ok, out=str(folder / "g.zarr" / "bad"),
                               scheduler="sync", dtype="i4")
    (folder / "g.zarr" / "bad" / "c" / "1" / "1").write_bytes(b"corrupt")
    (folder / "g.zarr" / "bad" / "c" / "3" / "2").unlink()
    (folder / "g.zarr" / "bad" / "stray.tmp").write_bytes(b"")
    return ok, bad


@pytest.mark.slow
def test_verify_on_a_local_cluster_matches_the_default_path(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    ok, bad = damaged(tmp_path)
    root = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="r")
    expected = root.verify()
    assert (expected.corrupt, expected.unexpected, expected.lost) == (1, 1, 1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        on_cluster = chunkflow.verify(root, scheduler=client, max_memory="64 MiB")
    assert on_cluster == expected


def run_verify(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "chunkflow", "verify", *argv],
                          capture_output=True, text=True, env=env, timeout=120)


def test_the_command_exits_0_when_clean_and_1_naming_what_is_wrong(tmp_path: Path) -> None:
    damaged(tmp_path)
    clean = run_verify(str(tmp_path / "g.zarr" / "ok"))
    assert clean.returncode == 0, clean.stderr
    assert "0 corrupt, 0 unexpected, 0 lost" in clean.stdout and "ok: nothing is wrong" in clean.stdout
    broken = run_verify(str(tmp_path / "g.zarr"), "--scheduler", "threads")
    assert broken.returncode == 1, broken.stderr
    for text in ("2 arrays", "bad/c/1/1: does not decode", "bad/stray.tmp", "bad/c/3/2",
                 "lost (stored by a finished job, gone now)",
                 "FAILED: 1 corrupt, 1 unexpected, 1 lost"):
        assert text in broken.stdout, broken.stdout
    missing = run_verify(str(tmp_path / "nothing.zarr"))
    assert missing.returncode == 1 and "nothing.zarr" in missing.stderr
