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
"""

from __future__ import annotations

import argparse
import doctest
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

WORKDIR_NAME = "chunkflow-zarr-suites"
ZARR2_VERSION = "2.18.7"
#: numcodecs as zarr 2.18.7 allows it (``<0.16``) and the packages zarr 2 imports.
ZARR2_PACKAGES = (f"zarr=={ZARR2_VERSION}", "numcodecs==0.15.1", "asciitree", "fasteners")
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL
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
    status: str  # "pass", "fail", "error", "skip"
    detail: str = ""


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
        self._outcome(example, "pass")

    def report_failure(self, out, test, example, got):  # noqa: ANN001
        if self.lenient and _INFO.match(example.source.strip()):
            self._outcome(example, "pass", "output ignored (.info)")
            return
        self._outcome(example, "fail", f"expected:\n{example.want}got:\n{got}")

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
            runner.outcomes.append(Outcome(example.lineno + 1, example.source.rstrip(), "skip"))
    return sorted(runner.outcomes, key=lambda outcome: outcome.line)


def fetch_tutorial(workdir: Path) -> Path:
    """``docs/tutorial.rst`` of the zarr 2.18 sdist, downloaded once into ``workdir``."""
    root = workdir / f"zarr-{ZARR2_VERSION}"
    if not root.exists():
        archive_path = workdir / f"zarr-{ZARR2_VERSION}.tar.gz"
        if not archive_path.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:",
                            "--no-deps", f"zarr=={ZARR2_VERSION}", "-d", str(workdir)], check=True)
        with tarfile.open(archive_path) as archive:
            archive.extractall(workdir, filter="data")
    return root / "docs" / "tutorial.rst"


def zarr2_site(workdir: Path) -> Path:
    """A folder holding zarr-python 2.18 and the numcodecs it allows (``pip --target``)."""
    site = workdir / "zarr2-site"
    if not (site / "zarr").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(site), *ZARR2_PACKAGES], check=True)
    return site


def run_child(library: str, tutorial: Path, workdir: Path) -> list[Outcome]:
    """Run one library's pass in a fresh interpreter and an empty folder."""
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[2])
    paths = [repo, env.get("PYTHONPATH", "")]
    if library == "zarr2":
        paths.insert(0, str(zarr2_site(workdir)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    result_path = workdir / f"tutorial-{library}.json"
    with tempfile.TemporaryDirectory(dir=workdir) as folder:
        subprocess.run([sys.executable, "-m", "benchmarks.zarr_suites.tutorial", "--child",
                        library, "--tutorial", str(tutorial), "--out", str(result_path)],
                       cwd=folder, env=env, check=True)
    return [Outcome(**item) for item in json.loads(result_path.read_text())]


def report(zarr2: list[Outcome], chunkflow: list[Outcome]) -> str:
    """The counts, and every example that passes on zarr 2.18 but not through chunkflow."""
    by_line = {outcome.line: outcome for outcome in chunkflow}
    ran = [o for o in zarr2 if o.status != "skip"]
    baseline = [o for o in ran if o.status == "pass"]
    failing = [by_line[o.line] for o in baseline if by_line[o.line].status != "pass"]
    extra = [o for o in ran if o.status != "pass" and by_line[o.line].status == "pass"]
    lines = [
        f"examples in the tutorial:              {len(zarr2)}",
        f"skipped (+SKIP, doctest-requires):     {len(zarr2) - len(ran)}",
        f"pass on zarr-python {ZARR2_VERSION}:            {len(baseline)}",
        f"  of those, pass through chunkflow:    {len(baseline) - len(failing)}",
        f"  of those, fail through chunkflow:    {len(failing)}",
        f"fail on zarr {ZARR2_VERSION}, pass through chunkflow: {len(extra)}",
        f"ignored through chunkflow: {'; '.join(IGNORED)}",
    ]
    for outcome in failing:
        lines.append(f"\n--- line {outcome.line} ({outcome.status}): {outcome.source}")
        lines.append(outcome.detail.rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / WORKDIR_NAME))
    parser.add_argument("--child", choices=("zarr2", "chunkflow"), help=argparse.SUPPRESS)
    parser.add_argument("--tutorial", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the zarr 2.18 baseline of an earlier run")
    args = parser.parse_args(argv)
    if args.child:
        outcomes = run_examples(Path(args.tutorial), args.child)
        Path(args.out).write_text(json.dumps([asdict(o) for o in outcomes]))
        return 0
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    tutorial = fetch_tutorial(workdir)
    baseline_path = workdir / "tutorial-zarr2.json"
    if args.reuse and baseline_path.exists():
        zarr2 = [Outcome(**item) for item in json.loads(baseline_path.read_text())]
    else:
        zarr2 = run_child("zarr2", tutorial, workdir)
    print(report(zarr2, run_child("chunkflow", tutorial, workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
