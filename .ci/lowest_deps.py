"""Run the tests marked ``lowest_deps`` with chunkflow's dependencies at their lowest
declared versions: every ``name>=X`` of pyproject's ``[project] dependencies`` is pinned
to ``name==X`` in a fresh venv, so the range pyproject declares is a range that works.

    python .ci/lowest_deps.py                   # what .ci/run does (a temporary venv)
    python .ci/lowest_deps.py --venv /tmp/low   # keep (and reuse) the venv there
    python .ci/lowest_deps.py --constraints     # only print the pins

The pins come from pyproject.toml each time (nothing to keep by hand). chunkflow is
installed from a copy of this tree without its dependencies (the pins bring them), with
pytest, pytest-xdist and hypothesis; the tests run in that copy. Only the test modules
that carry the marker are collected (the others may import what the pins leave out:
zarr-python, tensorstore...), and of those the quick ones: not ``slow``, not ``s3``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
MARKER = "lowest_deps"
TEST_TOOLS = ["pytest>=8", "pytest-xdist>=3.5", "hypothesis>=6.100"]
NOT_COPIED = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                    ".pytest_cache", ".hypothesis", "data", "docs")


def lowest_pins(pyproject: Path) -> list[str]:
    """``name[extras]==X`` for each runtime dependency of ``pyproject``, X its ``>=``
    bound. A dependency without one is an error: its lowest version is not declared.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "pyproject.toml"
    ...     _ = path.write_text('[project]\\ndependencies = ["dask[array]>=2025.1", "b>=1,<3"]')
    ...     lowest_pins(path)
    ['dask[array]==2025.1', 'b==1']
    """
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = []
    for text in dependencies:
        requirement = Requirement(text)
        lower = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(lower) != 1:
            raise SystemExit(f"{pyproject}: {text!r} declares no single '>=' lower bound")
        extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
        pins.append(f"{requirement.name}{extras}=={lower[0]}")
    return pins


def marked_test_files(root: Path) -> list[str]:
    """The test modules that use the marker (its use is what selects them)."""
    pattern = re.compile(rf"pytest\.mark\.{MARKER}\b")
    return sorted(str(path.relative_to(root)) for path in (root / "tests").rglob("test_*.py")
                  if pattern.search(path.read_text(encoding="utf-8")))


def run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, env=env, check=True)


def venv_env(venv_dir: Path) -> dict[str, str]:
    """A shell's environment with ``venv_dir`` active and none of ours leaking in."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA", "PYTEST"))}
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_dir)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="keep the venv here (reused if present)")
    parser.add_argument("--constraints", action="store_true", help="print the pins and stop")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest")
    args = parser.parse_args()
    pins = lowest_pins(ROOT / "pyproject.toml")
    if args.constraints:
        print("\n".join(pins))
        return 0
    with tempfile.TemporaryDirectory(prefix="chunkflow-lowest-") as scratch:
        work = Path(scratch)
        venv_dir = args.venv or work / "venv"
        if not (venv_dir / "bin" / "python").exists():
            venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
        env = venv_env(venv_dir)
        python = str(venv_dir / "bin" / "python")
        # Also as constraints (which take no extras): what the pins pull in cannot
        # move them either.
        constraints = work / "constraints.txt"
        constraints.write_text("".join(re.sub(r"\[.*\]", "", pin) + "\n" for pin in pins))
        source = work / "chunkflow"
        shutil.copytree(ROOT, source, ignore=NOT_COPIED)
        # The pins are requirements too (not only constraints): all of them install,
        # at exactly those versions, whatever the venv held before.
        run([python, "-m", "pip", "install", "-q", "-c", str(constraints), *pins,
             *TEST_TOOLS], work, env)
        run([python, "-m", "pip", "install", "-q", "--no-deps", str(source)], work, env)
        run([python, "-m", "pip", "list", "--format=freeze"], work, env)
        files = marked_test_files(source)
        if not files:
            raise SystemExit(f"no test module under tests/ uses pytest.mark.{MARKER}")
        # The long cases (slow) and those needing a moto server (s3) run in the full suite.
        run([python, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
             "-m", f"{MARKER} and not slow and not s3", "-o", "addopts=--strict-markers -ra",
             *files, *args.pytest_args], source, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
