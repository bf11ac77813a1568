"""pytest plugin: xarray's own zarr tests, reading through ``engine="chunkflow"``.

Loaded with ``-p benchmarks.xarray_suite.plugin`` by ``run.py``. With the environment
variable ``CHUNKFLOW_XARRAY_SUITE=chunkflow`` every read xarray makes with
``engine="zarr"`` (``open_dataset``, ``open_zarr``, ``open_datatree``,
``open_groups``, which all ask :func:`xarray.backends.plugins.get_backend`) goes to
:class:`chunkflow.xarray.ChunkflowBackendEntrypoint` instead; writes stay with
zarr-python, since ``to_zarr`` opens its ``ZarrStore`` directly and never asks
``get_backend``. Without the variable (or ``=zarr``) nothing is changed: the reference
run. The plugin patches at ``pytest_configure``, before any test module is imported.
"""

from __future__ import annotations

import os
from typing import Any

#: The environment variable selecting the read engine ("zarr" or "chunkflow").
MODE_VARIABLE = "CHUNKFLOW_XARRAY_SUITE"


def pytest_configure(config: Any) -> None:
    mode = os.environ.get(MODE_VARIABLE, "zarr")
    if mode not in ("zarr", "chunkflow"):
        raise ValueError(f"{MODE_VARIABLE} must be 'zarr' or 'chunkflow', got {mode!r}")
    if mode == "chunkflow":
        _redirect_zarr_reads()


def _redirect_zarr_reads() -> None:
    from xarray.backends import plugins
    from xarray.backends.zarr import ZarrBackendEntrypoint

    from chunkflow.xarray import ChunkflowBackendEntrypoint

    original = plugins.get_backend

    def get_backend(engine: Any) -> Any:
        zarr_class = isinstance(engine, type) and issubclass(engine, ZarrBackendEntrypoint)
        if engine == "zarr" or zarr_class:
            return ChunkflowBackendEntrypoint()
        return original(engine)

    plugins.get_backend = get_backend


def pytest_report_header(config: Any) -> str:
    return f"xarray reads through engine={os.environ.get(MODE_VARIABLE, 'zarr')!r}"
