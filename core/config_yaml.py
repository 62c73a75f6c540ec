"""`.plangate.yml` text → plain data, bounded (pure): YAML that cannot blow up, and values quoted short.

A few hundred bytes of YAML can name a billion values through aliases (`&a [x, x]`, `&b [*a, *a]`…).
PyYAML builds each aliased node once, so the loaded object is small, but anything that walks it
(a `repr()` in an error message, a check over every item) meets every value: 575 MB and more for a
368-byte file. So aliases are counted as they are composed, with the size of what each one stands
for, and a file past either bound is an error; the text itself has a size bound (and every value an
error message quotes goes through core.quoted, which never looks further than what it prints).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from core.quoted import shown

MAX_TEXT = 512 * 1024  # characters of `.plangate.yml`: 500 projects written out take ~100 KB
MAX_ALIASES = 1_000  # uses of `*anchor` in one file
MAX_EXPANDED = 100_000  # nodes and scalar characters all alias uses stand for, counted as if copied out


class YamlLimit(ValueError):
    """The text is past one of the bounds; str() says which, for a ConfigError."""


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts alias uses and what they expand to, and refuses aliases to themselves."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.expanded = 0
        self._open: set[str] = set()  # anchors whose node is still being composed
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self._peek()
            line = event.start_mark.line + 1 if event.start_mark else 0
            if event.anchor in self._open:
                raise YamlLimit(f"line {line}: alias *{shown(event.anchor)[1:-1]} is inside its own anchor")
            node = super().compose_node(parent, index)
            self.aliases += 1
            self.expanded += self._size(node) if node is not None else 0
            if self.aliases > MAX_ALIASES:
                raise YamlLimit(f"line {line}: more than {MAX_ALIASES:,} aliases (*anchor)")
            if self.expanded > MAX_EXPANDED:
                raise YamlLimit(f"line {line}: aliases expand to more than {MAX_EXPANDED:,} values and characters")
            return node
        anchor = self._peek().anchor
        if anchor is None:
            return super().compose_node(parent, index)
        self._open.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._open.discard(anchor)

    def _peek(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped

    def _size(self, node: Node) -> int:
        """Nodes plus scalar characters under `node`, aliases counted as copies (remembered per node:
        an alias only refers to a node already composed, so its size no longer changes)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        if isinstance(node, SequenceNode):
            size = 1 + sum(self._size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            size = 1 + sum(self._size(k) + self._size(v) for k, v in node.value)
        else:
            size = 1 + len(str(node.value))
        self._sizes[id(node)] = size
        return size


def load(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The YAML document in `text` as plain data; YamlLimit past a bound, yaml.YAMLError if malformed."""
    if len(text) > MAX_TEXT:
        raise YamlLimit(f"the file is {len(text):,} characters; the limit is {MAX_TEXT:,}")
    instance = loader(text)
    try:
        return instance.get_single_data()
    finally:
        instance.dispose()
