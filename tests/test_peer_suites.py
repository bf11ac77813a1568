"""The peers' own suites through chunkflow, against their recorded baselines.

The three ``slow`` tests run the runners of benchmarks/zarr_suites (zarr-python 3's
``tests/test_indexing.py``, zarr-python 2's tutorial) and benchmarks/xarray_suite
(xarray's ``-k zarr`` tests) in ``--check`` mode, each in a subprocess from the
repository root: only the chunkflow side runs, and it is compared with the peer's side
recorded in the baseline files next to the runners. A check fails on a new real
difference: a test or example that passes on the peer and not through chunkflow (or
fails only through chunkflow) that no by-design list explains, or tests collected that
are not the baseline's. The peers' sources are downloaded from the package index into
the runners' default work folders (shared by the three tests and by runs by hand); the
tests skip only when the index cannot be reached.

The quick tests below check the comparison itself on made-up outcomes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.xarray_suite.run import internals
from benchmarks.zarr_suites.baseline import (
    EXIT_UNREACHABLE,
    Baseline,
    IndexUnreachable,
    collection_problem,
    download_sdist,
    regressions,
    verdict,
)
from benchmarks.zarr_suites.indexing import new_differences
from benchmarks.zarr_suites.tutorial import BY_DESIGN, Outcome, by_design

REPO = Path(__file__).resolve().parents[1]
#: The xarray check's own pytest-xdist workers (see the README of benchmarks/xarray_suite
#: for the measurement behind it).
XARRAY_JOBS = "2"
#: Variables of the outer pytest (and its xdist worker) that the inner runs must not see.
_OUTER = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
          "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")


def run_check(module: str, *options: str) -> None:
    """Run ``python -m module --check options`` and fail with its report unless it
    passes (skip when the package index cannot be reached)."""
    env = {k: v for k, v in os.environ.items() if k not in _OUTER}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, "-m", module, "--check", *options], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=3600)
    if result.returncode == EXIT_UNREACHABLE:
        pytest.skip(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 0, (
        f"python -m {module} --check {' '.join(options)} exited {result.returncode}:\n"
        f"{result.stdout[-20000:]}\n--- stderr ---\n{result.stderr[-5000:]}")


@pytest.mark.slow
def test_zarr_python_indexing_tests_through_chunkflow() -> None:
    run_check("benchmarks.zarr_suites.indexing")


@pytest.mark.slow
def test_zarr_python_2_tutorial_through_chunkflow() -> None:
    run_check("benchmarks.zarr_suites.tutorial")


@pytest.mark.slow
def test_xarray_zarr_tests_through_chunkflow() -> None:
    run_check("benchmarks.xarray_suite", "-n", XARRAY_JOBS)


def test_regressions_are_new_failures_only() -> None:
    reference = {"a": "passed", "b": "passed", "c": "skipped", "d": "failed", "e": "xfailed",
                 "f": "passed"}
    chunkflow = {"a": ("passed", ""), "b": ("failed", "wrong"), "c": ("failed", "boom"),
                 "d": ("failed", "same"), "e": ("xfailed", "")}
    # b fails, c fails where the peer skips, f did not run; d fails on both, e xfails on
    # both; e is required to pass when its xfail is lifted.
    assert regressions(reference, chunkflow) == ["b", "c", "f"]
    assert regressions(reference, chunkflow, required=["e"]) == ["b", "c", "e", "f"]
    assert verdict([], [])[1] == 0
    assert verdict(["b"], [])[1] == 1
    assert verdict([], ["collected other tests"])[1] == 1


def test_indexing_deselected_tests_are_no_difference() -> None:
    helper = "tests.test_indexing::test_normalize_integer_selection"
    fields = "tests.test_indexing::test_get_selections_with_fields"
    reference = {helper: ("passed", ""), fields: ("xfailed", ""),
                 "tests.test_indexing::test_get_basic_selection_1d": ("passed", "")}
    chunkflow = {fields: ("xfailed", ""),
                 "tests.test_indexing::test_get_basic_selection_1d": ("passed", "")}
    # Deselected by reason: not a difference; a lifted xfail that still fails: one.
    assert new_differences(reference, chunkflow) == [fields]


def test_by_design_explains_only_its_own_failure() -> None:
    line, source, _, why = BY_DESIGN[0]
    refused = Outcome(line, source, "error", "UnsupportedFormatError: N5 is not a Zarr format")
    assert by_design(refused) == why
    assert by_design(Outcome(line, source, "error", "TypeError: other")) is None
    assert by_design(Outcome(line + 1, source, "error", refused.detail)) is None
    pickled = next(entry for entry in BY_DESIGN if entry[0] == 1631)
    assert by_design(Outcome(1631, pickled[1], "failed", "expected:\nTrue\ngot:\nFalse\n"))
    assert by_design(Outcome(1631, pickled[1], "error", "PicklingError: no")) is None


def test_xarray_internals_need_the_test_and_the_message() -> None:
    test = "xarray.tests.test_backends.TestZarrDictStore::test_indexing[2]"
    mocked = "AssertionError: Expected 'getitem' to have been called once."
    assert internals(test, mocked)
    assert internals(test, "AssertionError: values differ") is None
    assert internals("xarray.tests.test_backends.TestZarrDictStore::test_roundtrip",
                     mocked) is None


def test_collection_must_be_the_baselines() -> None:
    baseline = Baseline.of("demo", {"peer": "1.0"}, {"a": "passed", "b": "skipped"})
    assert baseline.not_passing == {"b": "skipped"}
    assert baseline.reference(["a", "b"]) == {"a": "passed", "b": "skipped"}
    assert collection_problem(baseline, ["b", "a"]) is None
    assert collection_problem(baseline, ["a", "b", "c"]) is not None
    assert collection_problem(baseline, ["a", "c"]) is not None


def test_an_unreachable_index_is_told_apart(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # An index on a local port nobody listens on: pip's connection is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    with pytest.raises(IndexUnreachable, match="cannot be reached"):
        download_sdist("zarr", "3.1.6", tmp_path, "tests/test_indexing.py")
    assert not list(tmp_path.iterdir())  # nothing half-downloaded left behind
