"""The README's process table and `plangate --help` describe the same commands and options."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from plangate import parser

README = (Path(__file__).parent.parent / "README.md").read_text()


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_documented_with_its_options() -> None:
    documented = dict(re.findall(r"^\| `plangate (\w+)([^`]*)` \|", README, re.M))
    commands = _subparsers()
    assert set(documented) == set(commands)
    for name, sub in commands.items():
        flags = {o for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        assert flags == set(re.findall(r"--[\w-]+", documented[name])), name


def test_the_two_commands_come_first() -> None:
    first_block = README.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block


def test_every_module_the_readme_names_exists() -> None:
    """The map in "How it is built" names modules by path, or by the end of one (`flows/x.py`, `gate.py` in a
    list under `core/`): each must be exactly one module of the tree, so a rename updates the map."""
    root = Path(__file__).parent.parent
    modules = [
        p.relative_to(root).as_posix()
        for d in ("bot", "workers", "core", "standin", "tests", "benchmarks")
        for p in (root / d).rglob("*.py")
    ]
    modules += [p.name for p in root.glob("*.py")]
    named = set(re.findall(r"`((?:[\w.]+/)*[\w]+\.py)", README))
    assert len(named) > 30
    unmatched = {path: n for path in named if (n := sum(m == path or m.endswith("/" + path) for m in modules)) != 1}
    assert unmatched == {}
