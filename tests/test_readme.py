"""The README's process table and `plangate --help` describe the same commands and options; the README and
docs/security.md name only settings, modules and files that exist."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from plangate import parser

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
SECURITY = (ROOT / "docs" / "security.md").read_text()
SETTING = re.compile(r"`((?:GITHUB|PLANGATE|REDIS)_[A-Z0-9_]+)(?:=[^`]*)?`")


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


def _documented_settings() -> set[str]:
    """Every name in the first column of the README's Settings table."""
    table = README.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    return {
        name for row in table.splitlines() if row.startswith("| `") for name in SETTING.findall(row.split(" | ")[0])
    }


def test_the_security_section_links_the_threat_model() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[headings.index("Security") + 1] == "Operations"
    section = README.split("\n## Security\n", 1)[1].split("\n## ", 1)[0]
    assert "[docs/security.md](docs/security.md)" in section and "`plangate/destroy`" in section


def test_the_security_doc_names_real_settings_and_files() -> None:
    named = set(SETTING.findall(SECURITY))
    assert named and named <= _documented_settings(), named - _documented_settings()
    paths = re.findall(r"`(deploy/[\w./-]+)`", SECURITY)
    assert paths and all((ROOT / path).exists() for path in paths), paths
