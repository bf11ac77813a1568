"""Every command driven as a person drives it: typed into a real terminal (tmux), the
screen read back, Ctrl-C pressed mid-job, and the command the screen suggests typed in.

A tmux server of its own (``-L``) runs a plain ``bash`` in a scratch folder; each line
typed ends with ``; echo "EXIT:$?"`` so that the screen says when it is done and how.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from tests.helpers.labels import blobs

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 600.0  # seconds a command may take on a loaded 2-core machine


class Terminal:
    """A tmux pane running bash: type lines, read the screen."""

    def __init__(self, cwd: Path) -> None:
        self.socket = f"chunkflow-test-{uuid.uuid4().hex[:8]}"
        self.exits = 0
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PS1": "$ ", "TERM": "xterm",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        # The scroll-back holds the whole session (tmux keeps 2000 lines by default).
        self.config = Path(tempfile.mkdtemp()) / "tmux.conf"
        self.config.write_text("set -g history-limit 100000\n")
        self._tmux("new-session", "-d", "-x", "250", "-y", "60", "-s", "main", "-c", str(cwd),
                   "bash --norc --noprofile", env=env)

    def _tmux(self, *argv: str, env: dict[str, str] | None = None) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", str(self.config), *argv],
                              capture_output=True, text=True, check=True, env=env).stdout

    def screen(self) -> str:
        """Everything the pane shows and scrolled past, wrapped lines joined."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-3000", "-t", "main")

    def type(self, line: str) -> None:
        self._tmux("send-keys", "-t", "main", "-l", line)
        self._tmux("send-keys", "-t", "main", "Enter")

    def run(self, command: str) -> tuple[int, str]:
        """Type ``command``, wait for its exit code; its exit code and what it printed."""
        before = len(self.screen())
        self.type(f'{command}; echo "EXIT:$?"')
        self.exits += 1
        screen = self.wait_for(lambda s: s.count("EXIT:") - s.count('"EXIT:') >= self.exits)
        code = int(re.findall(r"^EXIT:(\d+)", screen, re.M)[-1])
        return code, screen[max(before - 200, 0):]

    def wait_for(self, done: object) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            screen = self.screen()
            if done(screen):  # type: ignore[operator]
                return screen
            time.sleep(0.1)
        raise AssertionError(f"the terminal did not get there:\n{self.screen()}")

    def interrupt(self) -> None:
        self._tmux("send-keys", "-t", "main", "C-c")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        shutil.rmtree(self.config.parent, ignore_errors=True)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    pane = Terminal(tmp_path)
    try:
        yield pane
    finally:
        pane.close()


def test_every_command_in_a_terminal_and_ctrl_c_then_the_suggested_resume(
        terminal: Terminal, tmp_path: Path) -> None:
    image = (blobs((1024, 1024), 6, 0.5, seed=5) * 1000).astype("u2")
    chunkflow.array(image, chunks=(128, 128), store=str(tmp_path / "img.zarr"))
    big = np.random.default_rng(0).integers(0, 1000, (4096, 4096)).astype("u2")
    chunkflow.array(big, chunks=(256, 256), store=str(tmp_path / "big.zarr"))
    np.save(tmp_path / "page.npy", image[:300, :200])

    expectations = [
        ("chunkflow info img.zarr", 0, "uint16"),
        ("chunkflow tree img.zarr", 0, "img.zarr"),
        ("chunkflow copy img.zarr copy.zarr --zarr-format 2", 0, "copy.zarr"),
        ("chunkflow rechunk img.zarr rows.zarr --chunks 32,1024 --max-memory 64MiB", 0,
         "rows.zarr"),
        ("chunkflow filter img.zarr smooth.zarr --gaussian 2", 0, "gaussian filter"),
        ("chunkflow pyramid img.zarr img.ome.zarr", 0, "img.ome.zarr"),
        ("chunkflow label img.zarr labels.zarr --threshold 500", 0, "objects in img.zarr"),
        ("chunkflow measure labels.zarr --intensity img.zarr --output objects.csv", 0,
         "measured"),
        ("chunkflow measure labels.zarr --output objects.csv", 2,
         "already exists; pass --overwrite"),
        ("chunkflow measure labels.zarr --output objects.xlsx", 2, ".csv, .tsv"),
        ("chunkflow reduce img.zarr --median --percentile 99", 0, "percentile 99"),
        ("chunkflow threshold smooth.zarr mask.zarr --method otsu", 0, "otsu threshold"),
        ("chunkflow fill-holes mask.zarr filled.zarr", 0, "filled"),
        ("chunkflow remove-small-objects filled.zarr kept.zarr --max-size 20", 0, "removed"),
        ("chunkflow remove-small-holes kept.zarr clean.zarr --max-size 20", 0, "clean.zarr"),
        ("chunkflow convert page.npy page.ome.zarr --axes yx --scale 0.5,0.5 --units "
         "micrometer", 0, "page.ome.zarr"),
        ("chunkflow verify img.zarr", 0, "img.zarr"),
        ("chunkflow status smooth.zarr", 0, "no unfinished job"),
        ("chunkflow rechunk img.zarr x.zarr --chunks 8,8 --max-memory lots", 2,
         "'lots' is not a size"),
        ("chunkflow info notes.txt", 1, "does not exist"),
    ]
    for command, code, shows in expectations:
        exit_code, screen = terminal.run(command)
        assert exit_code == code, (command, screen)
        assert shows in screen, (command, screen)

    # A long job: Ctrl-C once its progress bar is up.
    job = "chunkflow filter big.zarr median.zarr --median 7 --resume --scheduler sync"
    typed = f'{job}; echo "EXIT:$?"'
    terminal.type(typed)
    terminal.exits += 1
    terminal.wait_for(lambda s: typed in s
                      and re.search(r"\d+%\|", s.rsplit(typed, 1)[-1]) is not None)
    terminal.interrupt()
    screen = terminal.wait_for(lambda s: s.count("EXIT:") - s.count('"EXIT:') >= terminal.exits)
    after = screen.rsplit(typed, 1)[-1]
    assert "EXIT:130" in after and "chunkflow filter: interrupted" in after, after
    suggested = re.search(r"to continue where it stopped: (.+)$", after, re.M)
    assert suggested is not None and suggested.group(1).strip() == job, after
    assert "to see what remains: chunkflow status median.zarr" in after

    code, screen = terminal.run("chunkflow status median.zarr")
    assert code == 0 and "remaining:" in screen, screen
    code, screen = terminal.run(suggested.group(1).strip())  # as the screen said
    assert code == 0, screen
    np.testing.assert_array_equal(chunkflow.open_array(str(tmp_path / "median.zarr"))[...],
                                  ndimage.median_filter(big, 7))

    code, screen = terminal.run("chunkflow demo")
    assert code == 0 and (tmp_path / "chunkflow-demo").is_dir(), screen
