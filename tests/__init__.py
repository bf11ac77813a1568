"""chunkflow's tests, one folder per package (helpers in tests/helpers and chunkflow.testing)."""
