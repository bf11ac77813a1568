"""zarr-python 2's tutorial (``docs/tutorial.rst``) as doctests, through chunkflow.

``python -m benchmarks.zarr_suites.tutorial`` runs every example of the tutorial twice,
each time in a fresh interpreter and an empty working folder:

* ``zarr2``: with zarr-python 2.18 itself (installed with ``pip install --target`` into
  the work folder, with the numcodecs it allows), the baseline: an example that fails
  there (it needs the network, a module that is not installed, prints a timing or a
  numpy 1 repr) cannot count against chunkflow;
* ``chunkflow``: with ``import zarr`` read as ``import chunkflow as zarr`` (and
  ``import zarr.storage`` as ``import chunkflow.storage``), under
  ``chunkflow.config.set({"chunkflow.array.zarr-format": 2})``, zarr-python 2's format,
  as zarr-python 3's ``default_zarr_format`` setting does.

Both use zarr-python 2's own doctest flags (``NORMALIZE_WHITESPACE``, ``ELLIPSIS``,
``IGNORE_EXCEPTION_DETAIL``, from its pyproject) and skip what its pytest-doctestplus
skips (``# doctest: +SKIP``, ``.. doctest-requires:: MODULE`` when MODULE is missing).
Through chunkflow the output checker ignores exactly two things (:data:`IGNORED`):

* the expected output of an example that shows a zarr object's repr, that is whose
  expected output starts with ``<zarr.`` (chunkflow's reprs read ``<chunkflow...>``);
* the output of an example that is an ``.info`` property (``z.info``, ``root.info``),
  whose text lists zarr-python 2's class names and byte counts.

Such an example still fails if it raises. The report counts the examples, those that pass
on zarr-python 2.18, and of those the ones that pass and fail through chunkflow, with the
failures' source lines and what differed.

``--check`` runs only the chunkflow pass and takes zarr-python 2.18's statuses from the
baseline recorded here (``baseline-tutorial-zarr-2.18.7-numcodecs-0.15.1.json``,
written by ``--record-baseline``). The exit code is 1 when an example that passes on
zarr-python 2.18 does not pass through chunkflow, or fails only through chunkflow, and
is not one of :data:`BY_DESIGN` failing as that entry says; or when the examples are
not the baseline's.
"""

from __future__ import annotations

import argparse
import doctest
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.zarr_suites.baseline import (
    Baseline,
    IndexUnreachable,
    collection_problem,
    download_sdist,
    environment_note,
    load_baseline,
    pip,
    regressions,
    unreachable_exit,
    verdict,
)

WORKDIR_NAME = "chunkflow-zarr-suites"
ZARR2_VERSION = "2.18.7"
TUTORIAL = "docs/tutorial.rst"
#: numcodecs as zarr 2.18.7 allows it (``<0.16``) and the packages zarr 2 imports.
ZARR2_PACKAGES = (f"zarr=={ZARR2_VERSION}", "numcodecs==0.15.1", "asciitree", "fasteners")
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL
#: The peer versions a baseline is recorded for (pinned in :data:`ZARR2_PACKAGES`).
PEERS = {"zarr": ZARR2_VERSION, "numcodecs": "0.15.1"}
SUITE = "tutorial"
HERE = Path(__file__).resolve().parent
_N5_FOLLOWS = ("follows from N5Store refused (line 854): `root` is the group made by "
               "zarr.open('data/example.n5', mode='w'), where zarr-python 2's N5Store "
               "reads any path as an implicit group; through chunkflow an ordinary, empty "
               "Zarr group")
#: Examples passing on zarr-python 2.18 that fail through chunkflow by design: (line,
#: source, what the failure says (a regex on the error or the output), why). An entry
#: explains a failure only when the example and its failure match it.
BY_DESIGN: tuple[tuple[int, str, str, str], ...] = (
    (854, "store = zarr.N5Store('data/example.n5')", r"^UnsupportedFormatError: ",
     "N5 is not a Zarr format: chunkflow refuses N5Store by name, saying how to convert "
     "(zarr-python 2 deprecates it, zarr-python 3 has none)"),
    (856, "z = root.zeros('foo/bar', shape=(1000, 1000), chunks=(100, 100), dtype='i4')",
     r"^ContainsArrayError: ", "follows from N5Store refused (line 854): `root` is still "
     "the SQLiteStore group of the example above, which has 'foo/bar'"),
    (883, "z = root['foo/bar/baz']", r"^KeyNotFoundError: ", _N5_FOLLOWS),
    (942, "z = root['foo/bar/baz']", r"^KeyNotFoundError: ", _N5_FOLLOWS),
    (1631, "len(s) > 5000  # relatively large because data have been pickled",
     r"^expected:\s*True\s*got:\s*False\s*$",
     "a pickled in-memory array is a reference to its MemoryStore, not a copy of its data, "
     "so that a worker never writes into a silent copy; unpickled in the same process it "
     "is the same store (z1 == z2 passes)"),
)
#: The statuses of earlier runs' result files, in today's words.
_OLD_STATUS = {"pass": "passed", "fail": "failed", "skip": "skipped"}
#: What the chunkflow run's output checker does not compare (see the module docstring).
IGNORED = ("expected output starting with '<zarr.' (a zarr object's repr)",
           "the output of an example that is an '.info' property")
_INFO = re.compile(r"^[\w.\[\]'\"/]+\.info\s*$")
_REQUIRES = re.compile(r"^\.\. doctest-requires::\s*(\S+)")
_IMPORTS = ((re.compile(r"^import zarr\.storage\s*$", re.M), "import chunkflow.storage"),
            (re.compile(r"^import zarr\s*$", re.M), "import chunkflow as zarr"))


@dataclass
class Outcome:
    """One example: where it is, its source, and what happened."""

    line: int
    source: str
    status: str  # "passed", "failed" (its output differs), "error" (it raised), "skipped"
    detail: str = ""

    @property
    def id(self) -> str:
        """The example's id in a baseline: its line and the first line of its source."""
        return f"line {self.line}: {self.source.splitlines()[0] if self.source else ''}"


class TutorialChecker(doctest.OutputChecker):
    """zarr-python 2's doctest comparison, with :data:`IGNORED` left out when ``lenient``."""

    def __init__(self, lenient: bool) -> None:
        self.lenient = lenient

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if self.lenient and want.lstrip().startswith("<zarr."):
            return True
        return super().check_output(want, got, optionflags)


class RecordingRunner(doctest.DocTestRunner):
    """A doctest runner that keeps one :class:`Outcome` per example."""

    def __init__(self, checker: TutorialChecker) -> None:
        super().__init__(checker=checker, optionflags=FLAGS, verbose=False)
        self.outcomes: list[Outcome] = []
        self.lenient = checker.lenient

    def _outcome(self, example: doctest.Example, status: str, detail: str = "") -> None:
        self.outcomes.append(Outcome(example.lineno + 1, example.source.rstrip(), status, detail))

    def report_start(self, out, test, example):  # noqa: ANN001 - doctest's signature
        pass

    def report_success(self, out, test, example, got):  # noqa: ANN001
        self._outcome(example, "passed")

    def report_failure(self, out, test, example, got):  # noqa: ANN001
        if self.lenient and _INFO.match(example.source.strip()):
            self._outcome(example, "passed", "output ignored (.info)")
            return
        self._outcome(example, "failed", f"expected:\n{example.want}got:\n{got}")

    def report_unexpected_exception(self, out, test, example, exc_info):  # noqa: ANN001
        kind, value = exc_info[:2]
        self._outcome(example, "error", f"{kind.__name__}: {str(value)[:500]}")


def examples(text: str, library: str) -> doctest.DocTest:
    """The tutorial's examples as one doctest (one namespace, as pytest-doctestplus runs
    an .rst file), with ``doctest-requires`` blocks marked SKIP where the module is
    missing and, for chunkflow, the zarr imports rewritten."""
    test = doctest.DocTestParser().get_doctest(text, {}, "tutorial.rst", "tutorial.rst", 0)
    if library == "chunkflow":
        for example in test.examples:
            for pattern, replacement in _IMPORTS:
                example.source = pattern.sub(replacement, example.source)
    for first, last, module in _required_blocks(text.splitlines()):
        if importlib.util.find_spec(module) is not None:
            continue
        for example in test.examples:
            if first <= example.lineno <= last:
                example.options[doctest.SKIP] = True
    return test


def _required_blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, module) of each block after ``.. doctest-requires::``: it
    ends at the next line that is neither blank nor indented, past the block's start."""
    blocks = []
    for number, line in enumerate(lines):
        match = _REQUIRES.match(line)
        if match is None:
            continue
        end, started = number + 1, False
        while end < len(lines):
            current = lines[end]
            if current.strip() and not current.startswith(" "):
                break
            started = started or bool(current.strip())
            end += 1
        blocks.append((number, end, match.group(1)))
    return blocks


def run_examples(tutorial: Path, library: str) -> list[Outcome]:
    """Run the tutorial in this process, in the current folder."""
    test = examples(tutorial.read_text(encoding="utf-8"), library)
    if library == "chunkflow":
        import chunkflow

        chunkflow.config.set({"chunkflow.array.zarr-format": 2})
    runner = RecordingRunner(TutorialChecker(lenient=library == "chunkflow"))
    runner.run(test, out=lambda text: None, clear_globs=False)
    skipped = {example.lineno + 1 for example in test.examples
               if example.options.get(doctest.SKIP)}
    ran = {outcome.line for outcome in runner.outcomes}
    for example in test.examples:
        if example.lineno + 1 in skipped and example.lineno + 1 not in ran:
            runner.outcomes.append(Outcome(example.lineno + 1, example.source.rstrip(),
                                           "skipped"))
    # Each outcome names its example by the tutorial's own source (not the rewritten one).
    originals = {e.lineno + 1: e.source.rstrip()
                 for e in doctest.DocTestParser().get_examples(tutorial.read_text("utf-8"))}
    for outcome in runner.outcomes:
        outcome.source = originals[outcome.line]
    return sorted(runner.outcomes, key=lambda outcome: outcome.line)


def zarr2_site(workdir: Path) -> Path:
    """A folder holding zarr-python 2.18 and the numcodecs it allows (``pip --target``),
    installed once (through a temporary folder and a rename, as the sdists)."""
    site = workdir / "zarr2-site"
    if (site / "zarr").exists():
        return site
    folder = Path(tempfile.mkdtemp(dir=workdir))
    try:
        pip(["install", "--quiet", "--no-deps", "--target", str(folder), *ZARR2_PACKAGES],
            "zarr-python 2.18 for the reference side")
        if not (site / "zarr").exists():  # else another run installed it meanwhile
            shutil.rmtree(site, ignore_errors=True)  # a partial one, from before
            os.rename(folder, site)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return site


def run_child(library: str, tutorial: Path, workdir: Path, folder: Path) -> list[Outcome]:
    """Run one library's pass in a fresh interpreter and an empty folder; the results go
    to ``folder``."""
    env = dict(os.environ)
    paths = [str(HERE.parents[1]), env.get("PYTHONPATH", "")]
    if library == "zarr2":
        paths.insert(0, str(zarr2_site(workdir)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    # The S3 examples reach for a public bucket; offline (CI), botocore's retries cost
    # half a minute a pass and change nothing. Both passes alike.
    env.setdefault("AWS_MAX_ATTEMPTS", "1")
    result_path = folder / f"tutorial-{library}.json"
    result_path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as cwd:
        subprocess.run([sys.executable, "-m", "benchmarks.zarr_suites.tutorial", "--child",
                        library, "--tutorial", str(tutorial), "--out", str(result_path)],
                       cwd=cwd, env=env, check=False)
    return read_outcomes(result_path)


def read_outcomes(path: Path) -> list[Outcome]:
    """The outcomes a pass wrote (none if it wrote nothing: it crashed)."""
    if not path.exists():
        return []
    items = json.loads(path.read_text())
    return [Outcome(**dict(item, status=_OLD_STATUS.get(item["status"], item["status"])))
            for item in items]


def by_design(outcome: Outcome) -> str | None:
    """Why ``outcome``, an example failing through chunkflow, fails by design (``None``:
    no entry of :data:`BY_DESIGN` explains it)."""
    for line, source, failure, why in BY_DESIGN:
        if (outcome.line, outcome.source) == (line, source) and re.search(failure,
                                                                             outcome.detail):
            return why
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the passes (or read them back), print the report, return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.child:
        outcomes = run_examples(Path(args.tutorial), args.child)
        Path(args.out).write_text(json.dumps([asdict(o) for o in outcomes]))
        return 0
    if args.record_baseline and (args.check or args.reuse):
        parser.error("--record-baseline runs zarr-python 2.18's pass: no --check or --reuse")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        root = download_sdist("zarr", ZARR2_VERSION, workdir, TUTORIAL)
        # A check's results are its own (runs by hand keep theirs in workdir for --reuse).
        folder = Path(tempfile.mkdtemp(dir=workdir)) if args.check else workdir
        try:
            return compare(args, root / TUTORIAL, workdir, folder)
        finally:
            if folder != workdir:
                shutil.rmtree(folder, ignore_errors=True)
    except IndexUnreachable as error:
        return unreachable_exit(error)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / WORKDIR_NAME))
    parser.add_argument("--child", choices=("zarr2", "chunkflow"), help=argparse.SUPPRESS)
    parser.add_argument("--tutorial", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the zarr 2.18 pass of an earlier run")
    parser.add_argument("--check", action="store_true",
                        help="run the chunkflow pass only, against the recorded baseline")
    parser.add_argument("--record-baseline", action="store_true",
                        help="run both passes and write the baseline of zarr-python 2.18's")
    return parser


def compare(args: argparse.Namespace, tutorial: Path, workdir: Path, folder: Path) -> int:
    """Both passes (zarr-python 2.18's from the baseline with --check), the report and the
    exit code."""
    notes: list[str] = []
    problems: list[str] = []
    baseline = None
    if args.check:
        baseline, note = load_baseline(HERE, SUITE, PEERS)
        notes.append(note)
        print(note, flush=True)
    chunkflow = run_child("chunkflow", tutorial, workdir, folder)
    ids = [outcome.id for outcome in chunkflow]
    if not chunkflow:
        problems.append("the chunkflow pass reported nothing (see its output above)")
    if baseline is None:
        zarr2 = reference_pass(args, tutorial, workdir, folder)
        reference = {outcome.id: outcome.status for outcome in zarr2}
        if args.record_baseline:
            notes.append(record(reference, problems))
    else:
        reference = baseline.reference(ids)
        problem = collection_problem(baseline, ids)
        problems += [problem] if problem else []
        notes.append(environment_note(baseline) or "")
    found = regressions(reference, {o.id: (o.status, o.detail) for o in chunkflow})
    outcomes = {outcome.id: outcome for outcome in chunkflow}
    found.sort(key=lambda test: int(test.split()[1].rstrip(":")))  # by line
    explained = {t: why for t in found if t in outcomes and (why := by_design(outcomes[t]))}
    differences = [t for t in found if t not in explained]
    closing, code = verdict(differences, problems)
    print(report(reference, outcomes, explained, differences,
                 [n for n in notes if n], closing))
    return code


def reference_pass(args: argparse.Namespace, tutorial: Path, workdir: Path,
                   folder: Path) -> list[Outcome]:
    """zarr-python 2.18's pass: read back from an earlier run with --reuse, else run."""
    earlier = workdir / "tutorial-zarr2.json"
    if args.reuse and earlier.exists():
        return read_outcomes(earlier)
    return run_child("zarr2", tutorial, workdir, folder)


def record(reference: dict[str, str], problems: list[str]) -> str:
    """Write the baseline of zarr-python 2.18's pass (if it ran); what was done."""
    if not reference:
        problems.append("zarr-python 2.18's pass reported nothing: no baseline written")
        return ""
    path = Baseline.of(SUITE, PEERS, reference).write(HERE)
    return f"baseline written: {path.relative_to(HERE.parents[1])}"


def report(reference: dict[str, str], chunkflow: dict[str, Outcome], explained: dict[str, str],
           differences: list[str], notes: list[str], closing: str) -> str:
    """The counts, the by-design failures with their reasons, and every new difference
    with what differed."""
    ran = [t for t, status in reference.items() if status != "skipped"]
    passing = [t for t in ran if reference[t] == "passed"]
    failing = [t for t in passing if _status(chunkflow, t) != "passed"]
    extra = [t for t in ran if reference[t] != "passed" and _status(chunkflow, t) == "passed"]
    lines = [
        *notes,
        f"examples in the tutorial:              {len(reference)}",
        f"skipped (+SKIP, doctest-requires):     {len(reference) - len(ran)}",
        f"pass on zarr-python {ZARR2_VERSION}:            {len(passing)}",
        f"  of those, pass through chunkflow:    {len(passing) - len(failing)}",
        f"  of those, fail through chunkflow:    {len(failing)} ({len(explained)} by design)",
        f"fail on zarr {ZARR2_VERSION}, pass through chunkflow: {len(extra)}",
        f"ignored through chunkflow: {'; '.join(IGNORED)}",
    ]
    for test, why in explained.items():
        lines.append(f"\n--- {test} ({_status(chunkflow, test)}), by design: {why}")
    lines.append(f"\nnew differences from zarr-python {ZARR2_VERSION}: {len(differences)}")
    for test in differences:
        outcome = chunkflow.get(test)
        lines.append(f"\n--- {test} ({_status(chunkflow, test)} through chunkflow, "
                     f"{reference[test]} on zarr-python {ZARR2_VERSION})")
        lines.append(outcome.detail.rstrip() if outcome else "")
    return "\n".join([*lines, "", closing])


def _status(outcomes: dict[str, Outcome], test: str) -> str:
    return outcomes[test].status if test in outcomes else "not run"


if __name__ == "__main__":
    sys.exit(main())
