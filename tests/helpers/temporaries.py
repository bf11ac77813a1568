"""A killed writer's leftover: a temporary file of a given age beside its target."""

from __future__ import annotations

import os
import time
from pathlib import Path

from chunkflow.storage.atomic_files import TMP_SUFFIX


def temporary_file(folder: Path, name: str, age: float) -> Path:
    """A temporary file for key ``name`` in ``folder``, last changed ``age`` s ago."""
    path = folder / f"{name}.0123456789ab{TMP_SUFFIX}"
    path.write_bytes(b"half a chunk")
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path
