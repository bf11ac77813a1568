"""zarr-python 3's ``tests/test_indexing.py``, on zarr-python arrays and on chunkflow's.

Run from the repository root::

    python -m benchmarks.zarr_suites.indexing --check      # chunkflow vs the baseline (~30 s)
    python -m benchmarks.zarr_suites.indexing              # both runs (about a minute)
    python -m benchmarks.zarr_suites.indexing --record-baseline   # both, and write it
    python -m benchmarks.zarr_suites.indexing -k fields      # a subset
    python -m benchmarks.zarr_suites.indexing --reuse        # print the last report again

The test file comes from the sdist of the installed zarr version (``pip download
--no-binary :all: --no-deps zarr==VERSION``, kept in ``--workdir``), so it matches the
zarr-python that runs it; it is never copied into this repository. It runs with
zarr-python's own pytest settings (warnings are errors, strict markers, strict xfail,
asyncio mode), without its benchmark options: as written (the reference), and with
:mod:`benchmarks.zarr_suites.indexing_plugin` making every array of the tests a
chunkflow array (see there what is deselected, and why). ``--check`` runs only the
chunkflow side and takes the reference from the baseline recorded for the installed
zarr-python (``baseline-indexing-zarr-VERSION.json`` here; without one, it runs the
reference side too).

Printed: the outcome counts of both sides, the deselected tests grouped by reason, and
every test that passes on zarr-python but not through chunkflow, with its message. The
exit code is 1 when a test that passes on zarr-python (or whose xfail is lifted) does
not pass through chunkflow, or fails through chunkflow and not on zarr-python, unless it
is deselected with its reason; or when the tests collected are not the baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
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
from benchmarks.zarr_suites.indexing_plugin import (
    COLLECTED_VARIABLE,
    MODE_VARIABLE,
    NUMPY_EXTRAS,
    deselection_reason,
    lifted_xfail,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUITE = "indexing"
TEST_FILE = "tests/test_indexing.py"
MODES = ("zarr", "chunkflow")
WORKDIR_NAME = "chunkflow-zarr-suites"
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "deselected")

Results = dict[str, tuple[str, str]]


def main(argv: list[str] | None = None) -> int:
    """Run (or re-read) the sides, print the comparison, return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.record_baseline and (args.k or args.check or args.reuse):
        parser.error("--record-baseline runs the whole file on both sides: no -k, "
                     "--check or --reuse")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        sdist = download_sdist("zarr", metadata.version("zarr"), workdir, TEST_FILE)
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


def compare(args: argparse.Namespace, sdist: Path, config: Path, folder: Path) -> int:
    """Both sides (the reference from the baseline with --check), the report, the code."""
    notes: list[str] = []
    problems: list[str] = []
    baseline = None
    if args.check:
        baseline, note = load_baseline(HERE, SUITE, installed("zarr"))
        notes.append(note)
        print(note, flush=True)
    chunkflow, collected = side("chunkflow", sdist, config, folder, args)
    if not collected and not args.reuse:
        problems.append("the chunkflow run collected nothing (see its output above)")
    if baseline is None:
        reference, reference_collected = side("zarr", sdist, config, folder, args)
        if args.record_baseline:
            notes.append(record(reference, reference_collected, problems))
    else:
        reference = {t: (o, "") for t, o in baseline.reference(collected).items()}
        problem = None if args.k else collection_problem(baseline, collected)
        problems += [problem] if problem else []
        notes += [environment_note(baseline) or "", "a subset (-k): the tests collected "
                  "are not compared with the baseline's" if args.k else ""]
    differences = new_differences(reference, chunkflow)
    closing, code = verdict(differences, problems)
    print(report(reference, chunkflow, differences, [n for n in notes if n], closing))
    return code


def record(reference: Results, collected: list[str], problems: list[str]) -> str:
    """Write the baseline of the zarr-python side (if it reported every test it
    collected); what was done, for the report."""
    if not collected or set(reference) != set(collected):
        problems.append(f"the zarr-python run reported {len(reference)} of the "
                        f"{len(collected)} tests it collected: no baseline written")
        return ""
    path = Baseline.of(SUITE, installed("zarr"),
                       {t: o for t, (o, _) in reference.items()}).write(HERE)
    return f"baseline written: {path.relative_to(REPO)}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default=None, help="a pytest -k expression (both runs)")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / WORKDIR_NAME),
                        help="where the sdist and the results go (reused between runs)")
    parser.add_argument("--reuse", action="store_true",
                        help="print the report of the last run without running again")
    parser.add_argument("--check", action="store_true",
                        help="run the chunkflow side only, against the recorded baseline")
    parser.add_argument("--record-baseline", action="store_true",
                        help="run both sides and write the baseline of the zarr-python side")
    return parser


def side(mode: str, sdist: Path, config: Path, folder: Path,
         args: argparse.Namespace) -> tuple[Results, list[str]]:
    """One side's results and the ids it collected (run, or read back with --reuse)."""
    junit = folder / f"indexing-{mode}.xml"
    collected = folder / f"indexing-{mode}-collected.json"
    if not args.reuse:
        collected.unlink(missing_ok=True)
        run_suite(mode, sdist, config, junit, args.k, collected)
    found = outcomes(junit) if junit.exists() else {}
    return found, json.loads(collected.read_text()) if collected.exists() else []


def new_differences(reference: Results, chunkflow: Results) -> list[str]:
    """The tests that pass on zarr-python (or whose xfail is lifted) but not through
    chunkflow, or fail only through chunkflow, less the deselected ones."""
    compared = {t: o for t, (o, _) in reference.items() if not deselection_reason(t)}
    return regressions(compared, chunkflow, [t for t in compared if lifted_xfail(t)])


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


def run_suite(mode: str, sdist: Path, config: Path, junit: Path, select: str | None,
              collected: Path) -> None:
    """One run of the test file on ``mode`` arrays, results to ``junit``, the selected
    tests' ids to ``collected``."""
    env = dict(os.environ, **{MODE_VARIABLE: mode, COLLECTED_VARIABLE: str(collected)},
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


def report(zarr: Results, chunkflow: Results, differences: list[str], notes: list[str],
           closing: str) -> str:
    """The comparison, as printed."""
    deselected = {t: deselection_reason(t) for t in zarr if t not in chunkflow}
    counts = {"zarr": Counter(o for o, _ in zarr.values()),
              "chunkflow": Counter(o for o, _ in chunkflow.values())}
    counts["chunkflow"]["deselected"] = sum(1 for why in deselected.values() if why)
    lines = [f"zarr-python {metadata.version('zarr')} {TEST_FILE}", *notes,
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
    lines += ["", f"passing on zarr-python (or xfail lifted), not through chunkflow, or "
                  f"failing only through chunkflow: {len(differences)}"]
    for test in differences:
        outcome, message = chunkflow.get(test, ("not run", ""))
        lines.append(f"         {test}: {outcome} on chunkflow, {zarr[test][0]} on "
                     f"zarr-python; {' '.join(message.split())[:200]}")
    better = sorted(t for t, (o, _) in zarr.items()
                    if o != "passed" and chunkflow.get(t, ("",))[0] == "passed")
    if better:
        lines += ["", f"not passing on zarr-python (xfail, fail), passing through chunkflow: "
                      f"{len(better)}"]
        lines.extend(f"         {t} ({zarr[t][0]} on zarr-python)" for t in better)
    return "\n".join([*lines, "", closing])


if __name__ == "__main__":
    sys.exit(main())
