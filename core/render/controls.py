"""Characters no comment carries (pure): control characters and bidi overrides, from terraform or users.

Terraform output, provider errors, resource values and config text can hold NUL, ESC (colour codes
a `-no-color` run still lets through from a provider), other C0/C1 controls and DEL, and the bidi
overrides and isolates that make text read differently from what it holds ("Trojan Source"). None
belongs in a GitHub comment: they are dropped, `\\t` and `\\n` kept, `\\r\\n` and a lone `\\r` made `\\n`.
Applied to every string of every body plangate sends (core.render.backstop); plangate's own markers
are ASCII JSON with every such character escaped, so sealed markers are never changed by it.
"""

from __future__ import annotations

_CONTROLS = (
    *range(0x00, 0x09),  # C0 before \t
    0x0B,
    0x0C,
    *range(0x0E, 0x20),  # C0 after \r
    0x7F,  # DEL
    *range(0x80, 0xA0),  # C1
    *range(0x202A, 0x202F),  # LRE RLE PDF LRO RLO
    *range(0x2066, 0x206A),  # LRI RLI FSI PDI
)
_DROP: dict[int, None] = dict.fromkeys(_CONTROLS)


def printable(text: str) -> str:
    """`text` without control characters and bidi overrides; tabs and line breaks kept (as `\\n`)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_DROP)
