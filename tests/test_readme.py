"""Every snippet of README.md runs: the Python blocks in order, in one namespace, in a
scratch folder; the command-line examples through ``python -m chunkflow``."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"```(python|bash)\n(.*?)```", re.S)
BLOCKS = [(kind, body) for kind, body in BLOCK.findall(README)]
# The Quickstart's install commands are what CI itself runs; they are not re-run here.
QUICKSTART = BLOCK.search(README[README.index("## Quickstart"):]).group(2)


def test_readme_has_snippets() -> None:
    assert sum(kind == "python" for kind, _ in BLOCKS) >= 8


def test_every_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, object] = {"__name__": "__readme__"}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for number, (kind, body) in enumerate(BLOCKS):
        if kind == "python":
            try:
                exec(compile(body, f"README.md python block {number}", "exec"), namespace)
            except Exception as err:  # the message is the point
                raise AssertionError(f"README python block {number} failed: {err!r}\n{body}") from err
            continue
        if body == QUICKSTART:
            continue
        for line in body.splitlines():
            if not line.startswith("chunkflow "):
                continue
            command = [sys.executable, "-m", "chunkflow", *shlex.split(line)[1:]]
            done = subprocess.run(command, capture_output=True, text=True, env=env,
                                  timeout=300)
            assert done.returncode == 0, f"README: {line!r} failed:\n{done.stderr}"
