"""The docs name only what exists: the README's process table and `plangate --help` describe the same
commands and options; every `make` target, `plangate` command, setting, module, file and link the README,
CONTRIBUTING.md, docs/ and benchmarks/RESULTS.md name is real; docs/settings.md lists every setting the
code reads; the configuration examples parse; the README stays a README (at most 15 KiB)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from core.config import parse_config
from plangate import parser
from plumbing import settings

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
SECURITY = (ROOT / "docs" / "security.md").read_text()
SETTINGS_DOC = (ROOT / "docs" / "settings.md").read_text()
DOCS = {
    path.relative_to(ROOT).as_posix(): path.read_text()
    for path in [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "benchmarks" / "RESULTS.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]
}
SETTING = re.compile(r"`((?:GITHUB|PLANGATE|REDIS)_[A-Z0-9_]+)(?:=[^`]*)?`")
NAMED_SETTING = re.compile(r"\b(?:GITHUB|PLANGATE|REDIS)_[A-Z0-9_]*[A-Z0-9]\b")
MAX_README = 15 * 1024
PRODUCT = ("bot", "workers", "plumbing", "core")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _code(text: str) -> list[str]:
    """Inline code spans and the lines of fenced blocks: where a doc names a command."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return lines + re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))


def test_the_readme_is_a_readme() -> None:
    assert len(README.encode()) <= MAX_README, "reference material goes in docs/"


def test_every_command_is_documented_with_its_options() -> None:
    documented = dict(re.findall(r"^\| `plangate ([\w-]+)([^`]*)` \|", README, re.M))
    commands = _subparsers()
    assert set(documented) == set(commands)
    for name, sub in commands.items():
        flags = {o for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        assert flags == set(re.findall(r"--[\w-]+", documented[name])), name


def test_every_plangate_command_the_docs_name_exists_with_its_options() -> None:
    commands = _subparsers()
    named = [(doc, span) for doc, text in DOCS.items() for span in _code(text) if span.startswith("plangate ")]
    assert len(named) > 10
    for doc, span in named:
        command = span.split()[1]
        assert command in commands, f"{doc}: `{span}`"
        sub = commands[command]
        flags = {o for a in sub._actions for o in a.option_strings}
        assert set(re.findall(r"--[\w-]+", span)) <= flags, f"{doc}: `{span}`"


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w-]+):(?!=)", makefile, re.M))


def test_every_make_target_the_docs_name_exists() -> None:
    targets = _make_targets()
    named = {(doc, span.split()[1]) for doc, text in DOCS.items() for span in _code(text) if span.startswith("make ")}
    assert {"demo", "test", "unit"} <= {target for _, target in named}
    assert {(doc, target) for doc, target in named if target not in targets} == set()


def test_the_two_commands_come_first() -> None:
    first_block = README.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block


def test_every_module_the_docs_name_exists() -> None:
    """Modules are named by path, or by the end of one (`flows/x.py`, `gate.py` in a list under `core/`):
    each must be exactly one module of the tree, so a rename updates the docs."""
    modules = [
        p.relative_to(ROOT).as_posix()
        for d in ("bot", "workers", "plumbing", "core", "standin", "tests", "benchmarks")
        for p in (ROOT / d).rglob("*.py")
    ]
    modules += [p.name for p in ROOT.glob("*.py")]
    named = {path for text in DOCS.values() for path in re.findall(r"`((?:[\w.]+/)*[\w]+\.py)", text)}
    assert len(named) > 60
    unmatched = {path: n for path in named if (n := sum(m == path or m.endswith("/" + path) for m in modules)) != 1}
    assert unmatched == {}


def test_every_file_the_docs_name_exists() -> None:
    named = {
        (doc, path)
        for doc, text in DOCS.items()
        for path in re.findall(r"`((?:deploy|scripts|tests|benchmarks|\.ci|\.github)/[\w./-]*[\w/])`", text)
    }
    assert len(named) > 10
    assert {(doc, path) for doc, path in named if not (ROOT / path).exists()} == set()


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_every_relative_link_resolves() -> None:
    links = [
        (doc, target)
        for doc, text in DOCS.items()
        for target in re.findall(r"\]\(([^)\s]+)\)", text)
        if not re.match(r"[a-z]+:", target)
    ]
    assert len(links) > 20
    assert [(doc, target) for doc, target in links if not _resolves(ROOT / doc, target)] == []


def _resolves(doc: Path, target: str) -> bool:
    path, _, anchor = target.partition("#")
    file = doc.parent / path if path else doc
    if not file.exists():
        return False
    return not anchor or anchor in {_slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.M)}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _settings_in_the_code() -> set[str]:
    """Every setting name the product's code holds in a string (docstrings aside)."""
    names = set()
    for path in [ROOT / "plangate.py", *(p for d in PRODUCT for p in (ROOT / d).rglob("*.py"))]:
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                names.update(NAMED_SETTING.findall(node.value))
    return names


def _read_by_the_code(name: str, in_code: set[str]) -> bool:
    """Named in the code, a `_PATH` file of a secret, or changing what the settings load to."""
    if name in in_code or name in {f"{secret}_PATH" for secret in settings.FILE_SECRETS}:
        return True
    return settings.load({name: "/srv"}) != settings.load({})


def test_every_setting_the_docs_name_is_read_by_the_code() -> None:
    in_code = _settings_in_the_code()
    named = {(doc, name) for doc, text in DOCS.items() for name in SETTING.findall(text)}
    assert len(named) > 40
    assert {(doc, name) for doc, name in named if not _read_by_the_code(name, in_code)} == set()


def _documented_settings() -> set[str]:
    """Every name in the first column of docs/settings.md's tables."""
    rows = (row for row in SETTINGS_DOC.splitlines() if row.startswith("| `"))
    return {name for row in rows for name in SETTING.findall(row.split(" | ")[0])}


def test_the_settings_reference_lists_every_setting_the_code_reads() -> None:
    missing = _settings_in_the_code() - _documented_settings()
    assert missing == set(), "add them to docs/settings.md"


def test_every_setting_the_docs_name_is_in_the_settings_reference() -> None:
    named = {name for text in DOCS.values() for name in SETTING.findall(text)}
    assert named - _documented_settings() == set()


def test_the_readme_names_the_essential_settings_and_links_the_rest() -> None:
    section = README.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    assert {"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "REDIS_URL"} <= set(SETTING.findall(section))
    assert "(docs/settings.md)" in section


@pytest.mark.parametrize("doc", ["README.md", "docs/configuration.md"])
def test_the_configuration_examples_parse(doc: str) -> None:
    examples = re.findall(r"^```yaml\n(.*?)^```", DOCS[doc], re.M | re.S)
    assert examples
    for example in examples:
        parse_config(example)


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
