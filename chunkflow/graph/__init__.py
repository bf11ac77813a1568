"""Dask graph builders on the chunk grid (to_dask, store, map_chunks): a later issue."""
