"""xarray's own zarr tests with reads through ``engine="chunkflow"`` (see run.py)."""
