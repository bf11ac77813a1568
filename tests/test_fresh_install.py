"""The README Quickstart's first line on a fresh machine: a new venv with nothing but
Python runs it exactly as written, and the demo finishes with its picture.

CI installs the test extra before anything else, so without this test it would never
notice a dependency that only the test extra brings (scipy was one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a fresh clone does not hold: copying it would hide a packaging mistake (a stale
# build/ or egg-info) or slow the copy down.
_NOT_COPIED = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                     ".pytest_cache", ".hypothesis", "chunkflow-demo", "data")


def quickstart_lines(readme: str) -> list[str]:
    """The lines of the first ```bash block under ``## Quickstart`` (as .ci/run reads them).

    Examples
    --------
    >>> quickstart_lines("## Quickstart\\n\\n```bash\\none\\ntwo\\n```\\n")
    ['one', 'two']
    """
    section = readme.split("## Quickstart", 1)[1]
    block = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert block is not None, "README.md's Quickstart has no ```bash block"
    return block.group(1).splitlines()


def fresh_env(venv_dir: Path) -> dict[str, str]:
    """The environment of a shell in which ``venv_dir`` is activated, and nothing of the
    test run's own Python leaks in (its PYTHONPATH would import the tree under test)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA", "PYTEST", "COV_"))}
    bin_dir = venv_dir / ("Scripts" if sys.platform == "win32" else "bin")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_dir)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["MPLBACKEND"] = "Agg"
    return env


def run_shell(command: str, cwd: Path, env: dict[str, str],
              timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32" or shutil.which("bash") is None,
                    reason="the Quickstart is a bash line")
def test_quickstart_first_line_on_a_fresh_venv(tmp_path: Path) -> None:
    first = quickstart_lines((ROOT / "README.md").read_text(encoding="utf-8"))[0]
    top_before = sorted(p.name for p in ROOT.iterdir())
    assert "chunkflow demo" in first and "pip install" in first, first
    repo = tmp_path / "repo"  # a copy: the build leaves no debris in the tree
    shutil.copytree(ROOT, repo, ignore=_NOT_COPIED)
    venv_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(venv_dir)
    env = fresh_env(venv_dir)

    done = run_shell(first, repo, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    png = repo / "chunkflow-demo" / "before-after.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", output[-4000:]
    assert str(png) in done.stdout and "not installed" not in output
    for name in ("raw.zarr", "smooth.zarr"):
        assert (repo / "chunkflow-demo" / name / "zarr.json").is_file()

    # Whatever the documented install brings, every command works with it. (Run outside
    # the copy, so that `python -c` cannot import its chunkflow/ instead of the installed.)
    which = run_shell("command -v chunkflow python && python -c "
                      "'import chunkflow; print(chunkflow.__file__)'", tmp_path, env)
    assert which.stdout.split()[:2] == [str(venv_dir / "bin" / "chunkflow"),
                                        str(venv_dir / "bin" / "python")]
    assert which.stdout.split()[2].startswith(str(venv_dir)), which.stdout  # installed
    demo = repo / "chunkflow-demo"
    for command in (f"chunkflow info {demo}/smooth.zarr",
                    f"chunkflow tree {demo}/raw.zarr",
                    f"chunkflow reduce {demo}/raw.zarr --op mean",
                    f"chunkflow copy {demo}/raw.zarr {tmp_path}/copy.zarr --zarr-format 2",
                    f"chunkflow filter {demo}/raw.zarr {tmp_path}/median.zarr --median 3",
                    "python -c 'import chunkflow, scipy.ndimage, yaml'"):
        step = run_shell(command, tmp_path, env, timeout=300)
        assert step.returncode == 0, f"{command}:\n{step.stdout}{step.stderr}"
    # On a terminal the commands draw a progress bar, without tqdm (a test extra) too.
    on_terminal = ("python -c 'import os, pty, sys; sys.exit(os.waitstatus_to_exitcode("
                   f"pty.spawn([\"chunkflow\", \"reduce\", \"{demo}/smooth.zarr\"])))'")
    step = run_shell(on_terminal, tmp_path, env, timeout=300)
    assert step.returncode == 0 and "100%" in step.stdout and "mean" in step.stdout, \
        step.stdout + step.stderr
    assert sorted(p.name for p in ROOT.iterdir()) == top_before  # no build/, no egg-info
