"""chunkflow imports and locks without POSIX-only modules, and without deprecation noise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def test_import_without_fcntl_and_lock_with_the_fallback(tmp_path: Path) -> None:
    # As on Windows: no fcntl. The fallback (msvcrt) is stood in for by flock-free
    # byte locks through a fake module, so the code path that runs there runs here.
    code = f"""
import sys, types, fcntl as real
import subprocess, multiprocessing, asyncio  # they probe for msvcrt themselves
sys.modules["fcntl"] = None
fake = types.ModuleType("msvcrt")
fake.LK_NBLCK, fake.LK_UNLCK = 2, 0
def locking(fd, mode, nbytes):
    import os
    if mode == fake.LK_UNLCK:
        real.lockf(fd, real.LOCK_UN, nbytes, 0, os.SEEK_SET)
    else:
        real.lockf(fd, real.LOCK_EX | real.LOCK_NB, nbytes, 0, os.SEEK_SET)
fake.locking = locking
sys.modules["msvcrt"] = fake
import chunkflow
from chunkflow.sync import process
assert process.fcntl is None
sync = chunkflow.ProcessSynchronizer({str(tmp_path)!r})
with sync.lock("a/c/0", timeout=1):
    pass
z = chunkflow.zeros(10, chunks=5, dtype="i4", synchronizer=sync)
z[3:7] = 1
assert z[:].sum() == 4
print("ok")
"""
    done = _python(code)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_import_and_crc32c_raise_no_deprecation_warning() -> None:
    code = """
import warnings
warnings.simplefilter("error", DeprecationWarning)
import chunkflow, numpy as np
z = chunkflow.create((8,), chunks=(4,), dtype="u2", codecs=[
    {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}])
z[:] = np.arange(8)
assert z[:].tolist() == list(range(8))
print("ok")
"""
    done = _python(code)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr
