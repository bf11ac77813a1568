"""chunkflow's benchmarks, run by hand: ``python -m benchmarks [--quick]``."""
