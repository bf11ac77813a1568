"""xarray's own zarr tests, read through ``engine="zarr"`` and through chunkflow.

Run from the repository root (takes minutes; ``-n 2`` on a 2-core machine)::

    python -m benchmarks.xarray_suite -n 2
    python -m benchmarks.xarray_suite -k "zarr and load_async"   # a subset, quicker

The tests come from the sdist of the installed xarray version (``pip download
--no-binary :all: --no-deps xarray==VERSION``, cached in ``--workdir``), so they match
the xarray that runs them; the sdist's copy of xarray is the one imported (the same
version, checked). ``test_backends.py`` and ``test_backends_datatree.py`` run twice
with ``-k zarr`` (and ``-k`` given here, ANDed): once as they are, once with
:mod:`benchmarks.xarray_suite.plugin` sending xarray's ``engine="zarr"`` reads to
``engine="chunkflow"`` (writes stay with ``to_zarr``). Both runs use xarray's own
pytest settings (warning filters, markers) without its mypy option. The async tests
need ``pytest-asyncio``.

Printed: the tests that pass on ``engine="zarr"``; how many of those fail through
chunkflow, grouped by cause (known causes by name, others by their normalized error
message), with examples; and the tests that inspect zarr-python's own objects
(:data:`ZARR_INTERNALS`), counted apart because no other engine can pass them.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
TEST_FILES = ("xarray/tests/test_backends.py", "xarray/tests/test_backends_datatree.py")
MODES = ("zarr", "chunkflow")
WORKDIR_NAME = "chunkflow-xarray-suite"

#: Tests that inspect zarr-python's own objects or calls rather than the dataset read:
#: (test id pattern, failure message pattern, why). Both must match, so that such a test
#: failing for another reason (wrong values) still counts as a failure.
ZARR_INTERNALS: tuple[tuple[str, str, str], ...] = (
    (r"TestZarr\w+::(test_async_load_multiple_variables|test_concurrent_load_multiple_objects"
     r"|test_indexing)\[", r"Expected 'getitem' to have been called",
     "mock zarr-python's AsyncArray / AsyncOIndex / AsyncVIndex.getitem and assert they "
     "were awaited (the loaded values are tested in tests/xarray/test_suite_findings.py)"),
    (r"TestInstrumentedZarrStore::test_region_write$", r"\('get', ",
     "counts calls to zarr-python's store against zarr-python's own pattern: chunkflow "
     "asks for the v2 and v3 metadata documents of a node in one batch, one get more"),
)

#: Known causes, matched against "ExceptionType: message" of a failure.
CAUSES: tuple[tuple[str, str], ...] = (
    (r"NotImplementedError.*async", "load_async: no async_getitem"),
    (r"DID NOT WARN.*RuntimeWarning|RuntimeWarning.*consolidated",
     "no consolidated fallback warning"),
    (r"store must be None, a chunkflow Store", "zarr-python Store refused"),
    (r"Regex pattern did not match", "error message differs"),
    (r"MetadataError.*dimension|dimension_names|_ARRAY_DIMENSIONS", "dimension names error type"),
    (r"KeyError: '(compressors|filters|serializer)'", "encoding lacks codecs"),
    (r"StringDType|dtype\('O'\)", "StringDType"),
    (r"zip", "zip"),
)


def main(argv: list[str] | None = None) -> int:
    """Run both suites (or re-read their results) and print the comparison."""
    args = _parser().parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    sdist = fetch_sdist(workdir)
    config = write_config(sdist, workdir)
    results = {}
    for mode in MODES:
        junit = workdir / f"results-{mode}.xml"
        if args.reuse == "none" or (args.reuse == "zarr" and mode == "chunkflow"):
            run_suite(mode, sdist, config, junit, args.jobs, args.k)
        results[mode] = outcomes(junit)
    print(report(results["zarr"], results["chunkflow"], args.examples))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--jobs", default="0", help="pytest-xdist workers (default 0)")
    parser.add_argument("-k", default=None, help="further test selection, ANDed with 'zarr'")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / WORKDIR_NAME),
                        help="where the sdist and the results go (reused between runs)")
    parser.add_argument("--reuse", choices=("none", "zarr", "all"), default="none",
                        help="reuse the last run's results: of engine='zarr' only (rerun "
                             "chunkflow), or of both (just print the report)")
    parser.add_argument("--examples", type=int, default=3, help="example tests per cause")
    return parser


def fetch_sdist(workdir: Path) -> Path:
    """The unpacked sdist of the installed xarray version (downloaded once)."""
    version = metadata.version("xarray")
    root = workdir / f"xarray-{version}"
    archive_path = workdir / f"xarray-{version}.tar.gz"
    if not (root / TEST_FILES[0]).exists():
        if not archive_path.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:",
                            "--no-deps", f"xarray=={version}", "-d", str(workdir)], check=True)
        with tarfile.open(archive_path) as archive:
            archive.extractall(workdir, filter="data")
    return root


def write_config(sdist: Path, workdir: Path) -> Path:
    """xarray's own pytest settings as an ini file, without its mypy option."""
    with open(sdist / "pyproject.toml", "rb") as file:
        options = tomllib.load(file)["tool"]["pytest"]["ini_options"]
    options["addopts"] = [o for o in options.get("addopts", []) if "mypy" not in o]
    options.pop("testpaths", None)
    lines = ["[pytest]"]
    for name, value in options.items():
        if isinstance(value, list):
            lines.append(f"{name} =")
            lines.extend(f"    {item}" for item in value)
        else:
            lines.append(f"{name} = {value}")
    config = workdir / "pytest.ini"
    config.write_text("\n".join(lines) + "\n")
    return config


def run_suite(mode: str, sdist: Path, config: Path, junit: Path, jobs: str,
              select: str | None) -> None:
    """One run of the zarr tests, reads through ``mode``, results to ``junit``."""
    env = dict(os.environ, CHUNKFLOW_XARRAY_SUITE=mode,
               PYTHONPATH=os.pathsep.join([str(sdist), str(REPO)]))
    keyword = "zarr" if select is None else f"zarr and ({select})"
    command = [sys.executable, "-m", "pytest", *TEST_FILES, "-c", str(config),
               "--rootdir", str(sdist), "-p", "benchmarks.xarray_suite.plugin",
               "-p", "no:cacheprovider", "-q", "-k", keyword, "-n", jobs,
               "--junitxml", str(junit), "-o", "junit_family=xunit1", "--tb=no", "-rN"]
    _check_version(sdist, env)
    print(f"running {mode}: {' '.join(command)}", flush=True)
    subprocess.run(command, cwd=sdist, env=env, check=False)


def _check_version(sdist: Path, env: dict[str, str]) -> None:
    # The sdist's xarray is imported; it must be the installed version.
    probe = subprocess.run([sys.executable, "-c", "import xarray; print(xarray.__file__, "
                            "xarray.__version__)"], cwd=sdist, env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    if not probe[0].startswith(str(sdist)) or probe[1] != metadata.version("xarray"):
        raise RuntimeError(f"expected xarray {metadata.version('xarray')} from {sdist}, "
                           f"got {probe}")


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """``{test id: (outcome, message)}`` from a junit file (passed, failed, skipped)."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message") or child.tag
            elif child.tag == "skipped":
                outcome, message = "skipped", child.get("message") or ""
        if found.get(test, ("passed",))[0] == "passed":  # a teardown error spoils a pass
            found[test] = (outcome, message)
    return found


def cause(message: str) -> str:
    """A failure's cause: a known one's name, else its normalized first line."""
    for pattern, name in CAUSES:
        if re.search(pattern, message, re.DOTALL):
            return name
    line = message.strip().splitlines()[0] if message.strip() else "(no message)"
    line = re.sub(r"0x[0-9a-f]+", "0x…", line)
    line = re.sub(r"(/[\w.+-]+)+", "/…", line)
    return re.sub(r"\d+", "N", line)[:150]


def internals(test: str, message: str) -> str | None:
    """Why ``test``, failing with ``message``, inspects zarr-python's own objects (None:
    it does not)."""
    for test_pattern, message_pattern, why in ZARR_INTERNALS:
        if re.search(test_pattern, test) and re.search(message_pattern, message):
            return why
    return None


def report(zarr: dict[str, tuple[str, str]], chunkflow: dict[str, tuple[str, str]],
           examples: int) -> str:
    """The comparison, as printed."""
    passing = sorted(t for t, (outcome, _) in zarr.items() if outcome == "passed")
    failing = [t for t in passing if chunkflow.get(t, ("missing", "not run"))[0] != "passed"]
    inside = {t: internals(t, chunkflow.get(t, ("", ""))[1]) for t in failing}
    groups: dict[str, list[str]] = defaultdict(list)
    for test in failing:
        if inside[test] is None:
            groups[cause(chunkflow.get(test, ("", "not run"))[1])].append(test)
    lines = [f"zarr tests run: {len(zarr)}; passing on engine='zarr': {len(passing)}",
             f"of those, failing through engine='chunkflow': {len(failing)}"
             f" ({sum(why is not None for why in inside.values())} inspect zarr-python's "
             f"own objects, {sum(map(len, groups.values()))} others)", ""]
    for name, tests in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"{len(tests):5d}  {name}")
        lines.extend(f"         {t}" for t in tests[:examples])
    whys: dict[str, list[str]] = defaultdict(list)
    for test, why in inside.items():
        if why is not None:
            whys[why].append(test)
    if whys:
        lines += ["", "inspecting zarr-python's own objects (not counted above):"]
        for why, tests in sorted(whys.items()):
            lines.append(f"{len(tests):5d}  {why}")
            lines.extend(f"         {t}" for t in tests[:examples])
    better = sorted(t for t, (outcome, _) in zarr.items()
                    if outcome == "failed" and chunkflow.get(t, ("",))[0] == "passed")
    if better:
        lines += ["", f"failing on engine='zarr' but passing through chunkflow: {len(better)}"]
        lines.extend(f"         {t}" for t in better[:examples])
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
