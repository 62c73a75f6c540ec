"""The provider directories a terraform/tofu CLI configuration (TF_CLI_CONFIG_FILE) installs from (pure).

`provider_installation { filesystem_mirror { path = ... } }` and `dev_overrides { "ns/name" = path }`
make terraform run the provider binaries found there, at plan and at apply, with the apply's
credentials. The file is HCL (version 1, which also reads JSON); this reads the subset a CLI
configuration uses (blocks, attributes, strings, lists, objects, comments) and raises ValueError on
anything else, so that a file it cannot read is never taken for one that names no directory.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.quoted import shown

# (key, value): a block or an object is a list of items; labels of a block are dropped.
Item = tuple[str, Any]

_TOKEN = re.compile(
    r"\s+|#[^\n]*|//[^\n]*|/\*.*?\*/"  # space and comments: skipped
    r'|(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<word>[A-Za-z0-9_.:/+-]+)|(?P<punct>[{}\[\]=,])',
    re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def provider_paths(text: str) -> tuple[tuple[str, str], ...]:
    """(what, path) for each directory the configuration installs providers from, as written:
    ("filesystem_mirror", path) and ("dev_overrides NS/NAME", path)."""
    try:
        items = _from_json(text) if text.lstrip().startswith("{") else _Parser(text).body(end=None)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    found: list[tuple[str, str]] = []
    for installation in _values(items, "provider_installation"):
        for mirror in _values(installation, "filesystem_mirror"):
            found.extend(
                ("filesystem_mirror", _string(path, "filesystem_mirror.path")) for path in _values(mirror, "path")
            )
        for overrides in _values(installation, "dev_overrides"):
            found.extend(
                (f"dev_overrides {name}", _string(path, f"dev_overrides {name}")) for name, path in _items(overrides)
            )
    return tuple(found)


def _values(items: Any, key: str) -> list[Any]:
    return [value for name, value in _items(items) if name == key]


def _items(value: Any) -> list[Item]:
    if not isinstance(value, list) or not all(isinstance(item, tuple) for item in value):
        raise ValueError(f"expected a block, found {shown(value)}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string")
    return value


def _from_json(text: str) -> list[Item]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON: {e.msg} at line {e.lineno}") from e
    return _items(_json_items(doc))


def _json_items(value: Any) -> Any:
    """JSON as HCL reads it: an object is a block; a list of objects, that block repeated."""
    if not isinstance(value, dict):
        return value
    items: list[Item] = []
    for key, sub in value.items():
        repeated = sub if isinstance(sub, list) and sub and all(isinstance(s, dict) for s in sub) else [sub]
        items.extend((key, _json_items(s)) for s in repeated)
    return items


class _Parser:
    """Recursive descent over HCL's tokens: body := (key label* ("=" value | "{" body "}"))*."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ValueError(f"line {text.count(chr(10), 0, pos) + 1}: cannot read {text[pos : pos + 10]!r}")
            kind = match.lastgroup
            if kind is not None:
                self.tokens.append((kind, match.group()))
            pos = match.end()
        self.at = 0

    def next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise ValueError("unexpected end of file")
        self.at += 1
        return self.tokens[self.at - 1]

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def body(self, end: str | None) -> list[Item]:
        items: list[Item] = []
        while self.peek() != end:
            kind, key = self.next()
            if kind == "punct":
                if key == ",":
                    continue
                raise ValueError(f"unexpected {shown(key)}")
            name = _unquote(key) if kind == "string" else key
            while self.peek() not in ("=", "{"):  # block labels
                if self.next()[0] != "string":
                    raise ValueError(f"unexpected token after {shown(name)}")
            items.append((name, self.value() if self.next()[1] == "=" else self.body("}")))
        if end is not None:
            self.next()
        return items

    def value(self) -> Any:
        kind, token = self.next()
        if kind == "string":
            return _unquote(token)
        if kind == "word":
            return token
        if token == "{":
            return self.body("}")
        if token == "[":
            values = []
            while self.peek() != "]":
                values.append(self.value())
                if self.peek() == ",":
                    self.next()
            self.next()
            return values
        raise ValueError(f"unexpected {shown(token)}")


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), token[1:-1])
