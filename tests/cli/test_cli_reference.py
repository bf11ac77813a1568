"""The README's command-line reference is the parser's, so it cannot drift."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from chunkflow.cli.parser import build_parser, command_parsers
from chunkflow.cli.reference import END, START, markdown_reference, replace_reference

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_readme_holds_the_generated_reference() -> None:
    section = README.partition(START)[2].partition(END)[0]
    assert section == "\n" + markdown_reference(), (
        "the README's command reference is stale: python -m chunkflow.cli.reference README.md")


def test_every_command_and_option_is_in_the_readme() -> None:
    for name, parser in command_parsers(build_parser()).items():
        assert f"#### `chunkflow {name}`" in README
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:  # an old spelling, kept working unlisted
                continue
            for option in action.option_strings:
                assert option in README, (name, option)


def test_a_readme_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no .* section"):
        replace_reference("# no section here\n", "text")
