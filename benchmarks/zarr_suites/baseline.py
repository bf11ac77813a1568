"""What the peer suites share: the peers' sdists, junit outcomes, and recorded baselines.

A peer suite (zarr-python 3's indexing tests, zarr-python 2's tutorial, xarray's zarr
tests) runs twice: on the peer itself (the reference) and through chunkflow. The
reference side depends only on the peer's version, so it is recorded once in a
baseline file committed next to the runner (``--record-baseline``), and ``--check``
runs only the chunkflow side against it. A baseline holds what the comparison needs
and no more: the peer versions it was recorded with, the number of collected tests
(or examples) with a digest of their ids, and the ids that do *not* pass on the
reference (failed, skipped, xfailed), with their outcome. Everything else collected
passes there.

The peers' sources come from the package index (``pip download --no-binary :all:``),
the only network a CI run has: when the index cannot be reached, a runner exits with
:data:`EXIT_UNREACHABLE` (tests/test_peer_suites.py skips on it).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

#: A runner's exit code when the package index cannot be reached (sysexits' EX_TEMPFAIL).
EXIT_UNREACHABLE = 75
#: pip's network options for the downloads: fail in minutes, not hours, when offline.
PIP_NETWORK = ("--timeout", "60", "--retries", "2")
#: What pip says when it cannot reach an index (urllib3's and the resolver's words).
_NETWORK = re.compile(r"NewConnectionError|Failed to establish a new connection|Max retries "
                      r"exceeded|Temporary failure in name resolution|Name or service not "
                      r"known|Network is unreachable|ConnectTimeout|ReadTimeout|ProxyError"
                      r"|Could not fetch URL|SSLError")
#: Outcomes that are failures: a test's ("failed"), a doctest example's ("failed": its
#: output differs, "error": it raised).
FAILING = frozenset({"failed", "error"})


class IndexUnreachable(RuntimeError):
    """The package index could not be reached, so a peer's sources cannot be had."""


def pip(args: list[str], what: str) -> None:
    """Run ``pip args``; when it fails, raise :class:`IndexUnreachable` if pip could not
    reach the package index (its output says so), else ``CalledProcessError`` (a real
    failure, such as a version the index does not have)."""
    command = [sys.executable, "-m", "pip", *args, *PIP_NETWORK]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    output = result.stdout + result.stderr
    sys.stderr.write(output)
    # Not a probe of the index: pip's configuration may add local file indexes that
    # answer for some projects, so only pip's own words about this request tell.
    found = _NETWORK.search(output)
    if found:
        raise IndexUnreachable(f"{what}: the package index cannot be reached "
                               f"({found.group(0)})")
    raise subprocess.CalledProcessError(result.returncode, command)


def download_sdist(project: str, version: str, workdir: Path, marker: str) -> Path:
    """The unpacked sdist ``workdir/project-version`` (downloaded and unpacked once).

    ``marker`` is a file of the sdist that must be there. Both steps go through a
    temporary folder and a rename, so that runs sharing ``workdir`` (the three peer
    tests, a run by hand) never see half a download or half an unpacked tree.
    """
    root = workdir / f"{project}-{version}"
    if (root / marker).exists():
        return root
    archive = workdir / f"{project}-{version}.tar.gz"
    if not archive.exists():
        with tempfile.TemporaryDirectory(dir=workdir) as folder:
            pip(["download", "--quiet", "--no-binary", ":all:", "--no-deps",
                 f"{project}=={version}", "-d", folder], f"{project}=={version}'s sdist")
            os.replace(Path(folder) / archive.name, archive)
    if root.exists():  # unpacked in part, by a run that was stopped
        shutil.rmtree(root)
    with tempfile.TemporaryDirectory(dir=workdir) as folder:
        with tarfile.open(archive) as opened:
            opened.extractall(folder, filter="data")
        try:
            os.rename(Path(folder) / root.name, root)
        except OSError:  # another run unpacked it first
            if not (root / marker).exists():
                raise
    return root


def junit_id(nodeid: str) -> str:
    """A pytest node id as ``outcomes`` names it (the junit ``classname::name``)."""
    names = nodeid.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]) + "::" + names[-1]


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """``{test id: (outcome, message)}`` from a junit file: passed, failed, skipped or
    xfailed (an error at setup or teardown is a failure)."""
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


def digest(ids: Iterable[str]) -> str:
    """sha256 of the sorted ids, one a line: the same tests, or not."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


def installed(*projects: str) -> dict[str, str]:
    """``{project: installed version}``."""
    return {project: metadata.version(project) for project in projects}


@dataclass
class Baseline:
    """The reference side of one suite, as recorded (see the module docstring)."""

    suite: str
    peers: dict[str, str]
    collected: int
    collected_sha256: str
    not_passing: dict[str, str]
    recorded_with: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, suite: str, peers: Mapping[str, str],
           reference: Mapping[str, str]) -> Baseline:
        """The baseline of ``reference``: ``{test id: outcome}`` of every collected test."""
        return cls(suite, dict(peers), len(reference), digest(reference),
                   {t: o for t, o in sorted(reference.items()) if o != "passed"},
                   _environment())

    def reference(self, collected: Iterable[str]) -> dict[str, str]:
        """``{test id: outcome}`` on the reference for the ``collected`` ids."""
        return {t: self.not_passing.get(t, "passed") for t in collected}

    def write(self, folder: Path) -> Path:
        path = baseline_path(folder, self.suite, self.peers)
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")
        return path


def _environment() -> dict[str, str]:
    # Recorded for the reader: what else the reference side ran with.
    return {"python": platform.python_version(), "numpy": metadata.version("numpy")}


def baseline_path(folder: Path, suite: str, peers: Mapping[str, str]) -> Path:
    """``folder/baseline-SUITE-PEER-VERSION[-PEER-VERSION...].json`` (the peer named as
    the suite by its version alone: ``baseline-xarray-2026.9.0-zarr-3.1.6.json``)."""
    versions = "-".join(version if name == suite else f"{name}-{version}"
                        for name, version in peers.items())
    return folder / f"baseline-{suite}-{versions}.json"


def load_baseline(folder: Path, suite: str,
                  peers: Mapping[str, str]) -> tuple[Baseline | None, str]:
    """The baseline recorded for exactly these peer versions, or ``None`` and why."""
    path = baseline_path(folder, suite, peers)
    if path.exists():
        return Baseline(**json.loads(path.read_text())), f"baseline {path.name}"
    others = sorted(p.name for p in folder.glob(f"baseline-{suite}-*.json"))
    wanted = ", ".join(f"{name} {version}" for name, version in peers.items())
    return None, (f"no baseline for {wanted} (recorded: {', '.join(others) or 'none'}): "
                  f"running the reference side too")


def collection_problem(baseline: Baseline, collected: Iterable[str]) -> str | None:
    """Why the collected ids cannot be compared with ``baseline`` (None: they can)."""
    ids = sorted(collected)
    if len(ids) == baseline.collected and digest(ids) == baseline.collected_sha256:
        return None
    missing = sorted(set(baseline.not_passing) - set(ids))
    return (f"collected {len(ids)} tests, the baseline {baseline.collected} (digest "
            f"{'equal' if digest(ids) == baseline.collected_sha256 else 'differs'}; "
            f"{len(missing)} of its not-passing ids not collected now, e.g. {missing[:3]}): "
            f"the same peer version collects other tests here (a missing optional "
            f"module? another pytest plugin?); compare, then --record-baseline")


def environment_note(baseline: Baseline) -> str | None:
    """A line when the environment differs from the one the baseline was recorded in."""
    now = _environment()
    changed = {k: (v, now.get(k)) for k, v in baseline.recorded_with.items() if now.get(k) != v}
    if not changed:
        return None
    return ("the baseline was recorded with " + ", ".join(
        f"{k} {old} (now {new})" for k, (old, new) in changed.items())
        + ": a new failure may be the reference's own; --record-baseline to see")


def regressions(reference: Mapping[str, str], chunkflow: Mapping[str, tuple[str, str]],
                required: Iterable[str] = ()) -> list[str]:
    """The ids of ``reference`` (``{id: outcome}``) that pass there, or are ``required``
    to pass through chunkflow, and do not pass through chunkflow (absent: not run),
    and those that fail through chunkflow but not on the reference. Sorted."""
    must = set(required)
    found = []
    for test, outcome in reference.items():
        got = chunkflow.get(test, ("not run", ""))[0]
        if ((outcome == "passed" or test in must) and got != "passed") or (
                got in FAILING and outcome not in FAILING):
            found.append(test)
    return sorted(found)


def verdict(differences: Iterable[str], problems: Iterable[str]) -> tuple[str, int]:
    """The closing line of a report and the exit code: 1 when there is a new
    difference or a reason the comparison means nothing, else 0."""
    differences, problems = list(differences), list(problems)
    if problems:
        return "CHECK FAILED: " + "; ".join(problems), 1
    if differences:
        return (f"CHECK FAILED: {len(differences)} new difference(s) from the reference, "
                f"listed above"), 1
    return "check passed: no difference from the reference but the explained ones", 0


def unreachable_exit(error: IndexUnreachable) -> int:
    """Say why nothing ran, and return :data:`EXIT_UNREACHABLE`."""
    print(f"not run: {error}", flush=True)
    return EXIT_UNREACHABLE
