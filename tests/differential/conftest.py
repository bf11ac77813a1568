"""The differential suite: every public function that computes values, against its
oracle, on inputs drawn by :mod:`chunkflow.testing.strategies`.

Two hypothesis profiles (registered in ``tests/conftest.py``):

- ``ci`` (the default): derandomized, so a run is reproducible, with each test's own
  example budget: the whole suite fits in about 3 minutes on 2 cores;
- ``long``: 100 times the examples, random seeds. Run it before closing a change to
  a computing function::

      python -m pytest tests/differential -n 2 --hypothesis-profile=long

A failing example that hypothesis finds is added to its test as an ``@example`` (the
regression corpus: it never shrinks), so CI replays it on every run.
"""

from __future__ import annotations

from hypothesis import settings

#: How many times each test's example budget the loaded profile runs.
SCALES = {"long": 100}


def budget(examples: int) -> settings:
    """The settings of a differential test: ``examples`` examples under the ``ci``
    profile, 100 times as many under ``long``."""
    # hypothesis' pytest plugin renames the profile when an option changes it
    # ("long-with-verbose-verbosity" under --hypothesis-verbosity=verbose).
    profile = settings.get_current_profile_name().partition("-with-")[0]
    scale = SCALES.get(profile, 1)
    return settings(max_examples=examples * scale)
