"""`.plangate.yml` text → plain data (pure): strict (no duplicate key, no arbitrary object) and bounded.

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


class YamlError(ValueError):
    """The text is not YAML plangate reads (malformed, a duplicate key, past a bound); str() says why."""


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
                raise YamlError(f"line {line}: alias *{shown(event.anchor)[1:-1]} is inside its own anchor")
            node = super().compose_node(parent, index)
            self.aliases += 1
            self.expanded += self._size(node) if node is not None else 0
            if self.aliases > MAX_ALIASES:
                raise YamlError(f"line {line}: more than {MAX_ALIASES:,} aliases (*anchor)")
            if self.expanded > MAX_EXPANDED:
                raise YamlError(f"line {line}: aliases expand to more than {MAX_EXPANDED:,} values and characters")
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


class _StrictLoader(BoundedLoader):
    """The bounded SafeLoader, refusing duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`, resolved by construct_mapping
            continue
        key = loader.construct_object(key_node)
        if isinstance(key, str) and key in seen:
            raise YamlError(f"line {key_node.start_mark.line + 1}: duplicate key {shown(key)}")
        if isinstance(key, str):
            seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(text: str) -> Any:
    """The YAML document in `text` as plain data; YamlError naming the line where it can."""
    if len(text) > MAX_TEXT:
        raise YamlError(f"the file is {len(text):,} characters; the limit is {MAX_TEXT:,}")
    try:
        return _single(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark else ""
        raise YamlError(f"{where}invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}") from None
    except RecursionError:
        raise YamlError("invalid YAML: nested too deeply") from None
    except YamlError:
        raise
    except ValueError:  # int() of more digits than Python converts
        raise YamlError("invalid YAML: a number too long to read") from None


def _single(text: str) -> Any:
    loader = _StrictLoader(text)  # a SafeLoader: no arbitrary objects (its reader checks the characters)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
