"""xarray's own zarr tests, read through ``engine="zarr"`` and through chunkflow.

Run from the repository root (takes minutes; ``-n 2`` on a 2-core machine)::

    python -m benchmarks.xarray_suite --check -n 2      # chunkflow vs the baseline
    python -m benchmarks.xarray_suite -n 2              # both runs
    python -m benchmarks.xarray_suite --record-baseline -n 2   # both, and write it
    python -m benchmarks.xarray_suite -k "load_async"   # a subset (ANDed with zarr)

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

``--check`` runs only the chunkflow side and takes the ``engine="zarr"`` side from the
baseline recorded here for the installed xarray and zarr-python
(``baseline-xarray-VERSION-zarr-VERSION.json``, written by ``--record-baseline``;
without one, it runs that side too). The exit code is 1 when a test that passes on
``engine="zarr"`` does not pass through chunkflow (or fails only through chunkflow)
and is not one of :data:`ZARR_INTERNALS` failing as that entry says; or when the
tests collected are not the baseline's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import tomllib

from benchmarks.zarr_suites.baseline import (
    Baseline,
    IndexUnreachable,
    collection_problem,
    download_sdist,
    environment_note,
    installed,
    load_baseline,
    outcomes,
    regressions,
    unreachable_exit,
    verdict,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUITE = "xarray"
PEERS = ("xarray", "zarr")
TEST_FILES = ("xarray/tests/test_backends.py", "xarray/tests/test_backends_datatree.py")
MODES = ("zarr", "chunkflow")
WORKDIR_NAME = "chunkflow-xarray-suite"

Results = dict[str, tuple[str, str]]

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
    """Run (or re-read) the sides, print the comparison, return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.record_baseline and (args.k or args.check or args.reuse != "none"):
        parser.error("--record-baseline runs all the zarr tests on both sides: no -k, "
                     "--check or --reuse")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        sdist = download_sdist("xarray", metadata.version("xarray"), workdir, TEST_FILES[0])
    except IndexUnreachable as error:
        return unreachable_exit(error)
    config = write_config(sdist, workdir)
    # A check's results are its own (runs by hand keep theirs in workdir for --reuse).
    folder = Path(tempfile.mkdtemp(dir=workdir)) if args.check else workdir
    try:
        return compare(args, sdist, config, folder)
    finally:
        if folder != workdir:
            shutil.rmtree(folder, ignore_errors=True)


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
    parser.add_argument("--check", action="store_true",
                        help="run the chunkflow side only, against the recorded baseline")
    parser.add_argument("--record-baseline", action="store_true",
                        help="run both sides and write the baseline of the engine='zarr' side")
    return parser


def compare(args: argparse.Namespace, sdist: Path, config: Path, folder: Path) -> int:
    """Both sides (engine="zarr" from the baseline with --check), the report, the code."""
    notes: list[str] = []
    problems: list[str] = []
    baseline = None
    if args.check:
        baseline, note = load_baseline(HERE, SUITE, installed(*PEERS))
        notes.append(note)
        print(note, flush=True)
    if baseline is None:
        reference, code = side("zarr", sdist, config, folder, args, args.reuse != "none")
        if args.record_baseline:
            notes.append(record(reference, code, problems))
    chunkflow, _ = side("chunkflow", sdist, config, folder, args, args.reuse == "all")
    if not chunkflow:
        problems.append("the chunkflow run reported no test (see its output above)")
    if baseline is not None:
        reference = {t: (o, "") for t, o in baseline.reference(chunkflow).items()}
        problem = None if args.k else collection_problem(baseline, chunkflow)
        problems += [problem] if problem else []
        notes += [environment_note(baseline) or "", "a subset (-k): the tests collected "
                  "are not compared with the baseline's" if args.k else ""]
    found = regressions({t: o for t, (o, _) in reference.items()}, chunkflow)
    inside = {t: internals(t, chunkflow.get(t, ("", ""))[1]) for t in found}
    differences = [t for t in found if inside[t] is None]
    closing, code = verdict(differences, problems)
    print(report(reference, chunkflow, inside, args.examples, [n for n in notes if n], closing))
    return code


def side(mode: str, sdist: Path, config: Path, folder: Path, args: argparse.Namespace,
         reuse: bool) -> tuple[Results, int]:
    """One side's results (run, or read back) and pytest's exit code (0 when read back)."""
    junit = folder / f"results-{mode}.xml"
    code = 0
    if not reuse:
        junit.unlink(missing_ok=True)
        code = run_suite(mode, sdist, config, junit, args.jobs, args.k)
    return (outcomes(junit) if junit.exists() else {}), code


def record(reference: Results, code: int, problems: list[str]) -> str:
    """Write the baseline of the engine="zarr" side, if pytest ran it to its end (exit
    code 0, or 1: some tests failed); what was done, for the report."""
    if code not in (0, 1) or not reference:
        problems.append(f"the engine='zarr' run ended with pytest's exit code {code}: "
                        f"no baseline written")
        return ""
    path = Baseline.of(SUITE, installed(*PEERS),
                       {t: o for t, (o, _) in reference.items()}).write(HERE)
    return f"baseline written: {path.relative_to(REPO)}"


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
              select: str | None) -> int:
    """One run of the zarr tests, reads through ``mode``, results to ``junit``; pytest's
    exit code."""
    env = dict(os.environ, CHUNKFLOW_XARRAY_SUITE=mode,
               PYTHONPATH=os.pathsep.join([str(sdist), str(REPO)]))
    keyword = "zarr" if select is None else f"zarr and ({select})"
    command = [sys.executable, "-m", "pytest", *TEST_FILES, "-c", str(config),
               "--rootdir", str(sdist), "-p", "benchmarks.xarray_suite.plugin",
               "-p", "no:cacheprovider", "-q", "-k", keyword, "-n", jobs,
               "--junitxml", str(junit), "-o", "junit_family=xunit1", "--tb=no", "-rN"]
    _check_version(sdist, env)
    print(f"running {mode}: {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=sdist, env=env, check=False).returncode


def _check_version(sdist: Path, env: dict[str, str]) -> None:
    # The sdist's xarray is imported; it must be the installed version.
    probe = subprocess.run([sys.executable, "-c", "import xarray; print(xarray.__file__, "
                            "xarray.__version__)"], cwd=sdist, env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    if not probe[0].startswith(str(sdist)) or probe[1] != metadata.version("xarray"):
        raise RuntimeError(f"expected xarray {metadata.version('xarray')} from {sdist}, "
                           f"got {probe}")


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


def report(zarr: Results, chunkflow: Results, inside: dict[str, str | None], examples: int,
           notes: list[str], closing: str) -> str:
    """The comparison, as printed: ``inside`` maps each test passing on engine="zarr"
    and not through chunkflow (or failing only there) to why it inspects zarr-python's
    own objects, or None (a new difference)."""
    passing = sorted(t for t, (outcome, _) in zarr.items() if outcome == "passed")
    groups: dict[str, list[str]] = defaultdict(list)
    for test, why in inside.items():
        if why is None:
            groups[cause(chunkflow.get(test, ("", "not run"))[1])].append(test)
    explained = sum(why is not None for why in inside.values())
    lines = [*notes, f"zarr tests run: {len(zarr)}; passing on engine='zarr': {len(passing)}",
             f"of those, failing through engine='chunkflow' (or failing only there): "
             f"{len(inside)} ({explained} inspect zarr-python's own objects, "
             f"{len(inside) - explained} others: new differences)", ""]
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
    return "\n".join([*lines, "", closing])


if __name__ == "__main__":
    sys.exit(main())
