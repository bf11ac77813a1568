"""zarr-python\x27s own suites run through chunkflow (see README.md)."""
