"""zarr-python 3's ``tests/test_indexing.py``, on zarr-python arrays and on chunkflow's.

Run from the repository root (about a minute)::

    python -m benchmarks.zarr_suites.indexing
    python -m benchmarks.zarr_suites.indexing -k fields      # a subset
    python -m benchmarks.zarr_suites.indexing --reuse        # print the last report again

The test file comes from the sdist of the installed zarr version (``pip download
--no-binary :all: --no-deps zarr==VERSION``, kept in ``--workdir``), so it matches the
zarr-python that runs it; it is never copied into this repository. It runs twice with
zarr-python's own pytest settings (warnings are errors, strict markers, strict xfail,
asyncio mode), without its benchmark options: as written, then with
:mod:`benchmarks.zarr_suites.indexing_plugin` making every array of the tests a
chunkflow array (see there what is deselected, and why).

Printed: the outcome counts of both runs, the deselected tests grouped by reason, and
every test that passes on zarr-python but not through chunkflow, with its message.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path

import tomllib

from benchmarks.zarr_suites.indexing_plugin import (
    MODE_VARIABLE,
    NUMPY_EXTRAS,
    deselection_reason,
)

REPO = Path(__file__).resolve().parents[2]
TEST_FILE = "tests/test_indexing.py"
MODES = ("zarr", "chunkflow")
WORKDIR_NAME = "chunkflow-zarr-suites"
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "deselected")


def main(argv: list[str] | None = None) -> int:
    """Run both (or re-read their results) and print the comparison."""
    args = _parser().parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    sdist = fetch_sdist(workdir)
    config = write_config(sdist, workdir)
    results = {}
    for mode in MODES:
        junit = workdir / f"indexing-{mode}.xml"
        if not args.reuse:
            run_suite(mode, sdist, config, junit, args.k)
        results[mode] = outcomes(junit)
    print(report(results["zarr"], results["chunkflow"]))
    failing = [t for t, (o, _) in results["chunkflow"].items() if o == "failed"]
    return 1 if failing else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default=None, help="a pytest -k expression (both runs)")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / WORKDIR_NAME),
                        help="where the sdist and the results go (reused between runs)")
    parser.add_argument("--reuse", action="store_true",
                        help="print the report of the last run without running again")
    return parser


def fetch_sdist(workdir: Path) -> Path:
    """The unpacked sdist of the installed zarr version (downloaded once)."""
    version = metadata.version("zarr")
    root = workdir / f"zarr-{version}"
    archive_path = workdir / f"zarr-{version}.tar.gz"
    if not (root / TEST_FILE).exists():
        if not archive_path.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:",
                            "--no-deps", f"zarr=={version}", "-d", str(workdir)], check=True)
        with tarfile.open(archive_path) as archive:
            archive.extractall(workdir, filter="data")
    return root


def write_config(sdist: Path, workdir: Path) -> Path:
    """zarr-python's pytest settings as an ini file, without its benchmark options."""
    with open(sdist / "pyproject.toml", "rb") as file:
        options = tomllib.load(file)["tool"]["pytest"]["ini_options"]
    addopts = options.get("addopts", [])
    kept = []
    for i, option in enumerate(addopts):
        skipped = option.startswith("--benchmark") or (
            i > 0 and addopts[i - 1].startswith("--benchmark-columns"))
        if not skipped and option not in ("--durations", "10"):
            kept.append(option)
    options["addopts"] = kept
    options.pop("testpaths", None)
    lines = ["[pytest]"]
    for name, value in options.items():
        if isinstance(value, list):
            lines.append(f"{name} =")
            lines.extend(f"    {item}" for item in value)
        else:
            lines.append(f"{name} = {value}")
    config = workdir / "pytest-zarr.ini"
    config.write_text("\n".join(lines) + "\n")
    return config


def run_suite(mode: str, sdist: Path, config: Path, junit: Path, select: str | None) -> None:
    """One run of the test file on ``mode`` arrays, results to ``junit``."""
    env = dict(os.environ, **{MODE_VARIABLE: mode},
               PYTHONPATH=os.pathsep.join([str(sdist), str(REPO)]))
    command = [sys.executable, "-m", "pytest", TEST_FILE, "-c", str(config),
               "--rootdir", str(sdist), "-p", "benchmarks.zarr_suites.indexing_plugin",
               "-p", "no:cacheprovider", "-q", "--junitxml", str(junit),
               "-o", "junit_family=xunit1", "--tb=line", "-rN"]
    if select:
        command += ["-k", select]
    _check_version(sdist, env)
    print(f"running {mode}: {' '.join(command)}", flush=True)
    subprocess.run(command, cwd=sdist, env=env, check=False)


def _check_version(sdist: Path, env: dict[str, str]) -> None:
    # The installed zarr-python runs its own sdist's tests (not the sdist's sources).
    probe = subprocess.run([sys.executable, "-c", "import zarr; print(zarr.__version__)"],
                           cwd=sdist, env=env, check=True, capture_output=True,
                           text=True).stdout.strip()
    if probe != metadata.version("zarr"):
        raise RuntimeError(f"expected zarr {metadata.version('zarr')}, imported {probe}")


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """``{test id: (outcome, message)}`` from a junit file."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message") or child.tag
            elif child.tag == "skipped":
                xfail = (child.get("type") or "").endswith("xfail")
                outcome, message = ("xfailed" if xfail else "skipped"), child.get("message") or ""
        if found.get(test, ("passed",))[0] == "passed":  # a teardown error spoils a pass
            found[test] = (outcome, message)
    return found


def report(zarr: dict[str, tuple[str, str]], chunkflow: dict[str, tuple[str, str]]) -> str:
    """The comparison, as printed."""
    deselected = {t: deselection_reason(t) for t in zarr if t not in chunkflow}
    counts = {"zarr": Counter(o for o, _ in zarr.values()),
              "chunkflow": Counter(o for o, _ in chunkflow.values())}
    counts["chunkflow"]["deselected"] = sum(1 for why in deselected.values() if why)
    lines = [f"zarr-python {metadata.version('zarr')} {TEST_FILE}",
             f"{'':12}{'zarr-python':>12}{'chunkflow':>12}"]
    lines += [f"{o:12}{counts['zarr'][o]:12d}{counts['chunkflow'][o]:12d}" for o in OUTCOMES]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for test, why in deselected.items():
        by_reason[why or "not run (unknown)"].append(test)
    if by_reason:
        lines += ["", "deselected in the chunkflow run:"]
        for why, tests in sorted(by_reason.items()):
            lines.append(f"{len(tests):5d}  {why}")
            lines.extend(f"         {t}" for t in sorted(tests)[:4])
    lines += ["", "taken out of zarr-python's lists of refused selections in the chunkflow "
                  "run (numpy accepts them):"]
    lines.extend(f"         {what} from {lists}: {why}" for lists, what, why in NUMPY_EXTRAS)
    worse = sorted(t for t, (o, _) in zarr.items()
                   if o == "passed" and t in chunkflow and chunkflow[t][0] != "passed")
    lines += ["", f"passing on zarr-python, not through chunkflow: {len(worse)}"]
    lines.extend(f"         {t}: {chunkflow[t][0]} {chunkflow[t][1][:200]}" for t in worse)
    better = sorted(t for t, (o, _) in zarr.items()
                    if o != "passed" and chunkflow.get(t, ("",))[0] == "passed")
    if better:
        lines += ["", f"not passing on zarr-python (xfail, fail), passing through chunkflow: "
                      f"{len(better)}"]
        lines.extend(f"         {t} ({zarr[t][0]} on zarr-python)" for t in better)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
