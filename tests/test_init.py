"""The package's top level: every public name resolves, and reading arrays does not
load dask.array (chunkflow/__init__.py loads the graph builders on first use)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkflow

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves_and_is_listed() -> None:
    assert chunkflow.__all__ == sorted(chunkflow.__all__)
    for name in chunkflow.__all__:
        assert getattr(chunkflow, name) is not None, name
        assert name in dir(chunkflow)


@pytest.mark.slow
def test_reading_and_writing_do_not_load_dask_array_until_a_graph_is_built(
    tmp_path: Path,
) -> None:
    script = (
        "import sys, numpy as np, chunkflow\n"
        f"z = chunkflow.zeros((8, 8), chunks=(4, 4), dtype='u1', store={str(tmp_path / 'a.zarr')!r})\n"
        "z[:] = 1\n"
        "assert int(z[:].sum()) == 64\n"
        "assert 'dask.array' not in sys.modules, 'dask.array loaded by reads and writes'\n"
        "from chunkflow import to_dask\n"
        "assert int(to_dask(z).sum().compute()) == 64 and 'dask.array' in sys.modules\n"
        "assert chunkflow.to_dask is to_dask\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        chunkflow.no_such_function  # noqa: B018
    except AttributeError as err:
        assert "no_such_function" in str(err)
    else:
        raise AssertionError("chunkflow.no_such_function resolved")
