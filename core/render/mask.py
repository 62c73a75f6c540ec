"""Masking of sensitive values in everything plangate renders (pure).

Rule for short secrets: a value of at least `MIN_SECRET_LEN` characters is masked wherever it
appears, even inside a longer word. A shorter value ("1", "abc") is masked only where it stands
as a whole double-quoted string (`"abc"`), the way plan text and error messages quote values;
masking every "1" would wreck addresses like `x[1]` and counts while hiding nothing useful.
Multi-line values are also masked line by line (plan text shows heredocs one line per row), and
their JSON-escaped form is masked too (error messages quote values that way).

Patterns (`mask_patterns`, `PLANGATE_MASK_PATTERNS`) run on RE2, whose matching time is linear in
the text: a pattern like `(a|aa)+$` cannot hold a job, whoever wrote it. What RE2 cannot express
(backreferences, lookaround) is refused when the pattern is read, naming it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, Protocol

import re2

MASK = "(sensitive value)"
MIN_SECRET_LEN = 4


class Pattern(Protocol):
    def sub(self, repl: Callable[[Any], str], text: str) -> str: ...


class PatternError(ValueError):
    """The pattern is not one RE2 accepts; str() says why."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Pattern:
    """A linear-time regex; PatternError when RE2 cannot compile it."""
    options = re2.Options()
    options.log_errors = False
    try:
        compiled: Pattern = re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        text = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        raise PatternError(text) from None
    return compiled


def _variants(secret: str) -> set[str]:
    """The spellings under which a secret may show up in rendered text."""
    out = {secret}
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    out.add(escaped)
    if "\n" in secret:
        out.update(line.strip() for line in secret.splitlines())
    return {v for v in out if v}


class Masker:
    """A reusable `mask`: the secret spellings and patterns are prepared once for many texts.

    An invalid pattern raises PatternError: rendering with a broken mask would leak, so fail loudly.
    """

    def __init__(self, secrets: Iterable[str], patterns: Iterable[str] = ()) -> None:
        self._long: set[str] = set()
        self._short: set[str] = set()
        for secret in secrets:
            if not isinstance(secret, str) or not secret:
                continue
            for form in _variants(secret):
                (self._long if len(form) >= MIN_SECRET_LEN else self._short).add(form)
        self._patterns = [compile_pattern(p) for p in patterns]

    def __call__(self, text: str) -> str:
        # Only build the alternation from values that occur: `in` is fast, big alternations are not.
        found = [f for f in self._long if f in text]
        found += [f'"{f}"' for f in self._short if f'"{f}"' in text]
        if found:
            found.sort(key=len, reverse=True)  # longest first: a secret containing another goes whole
            text = re.sub("|".join(map(re.escape, found)), MASK, text)
        for pattern in self._patterns:
            text = pattern.sub(lambda m: MASK if m.group(0) else "", text)
        return text


def mask(text: str, secrets: Iterable[str], patterns: Iterable[str] = ()) -> str:
    """`text` with each secret and each non-empty match of the regex `patterns` replaced by `MASK`."""
    return Masker(secrets, patterns)(text)


MIN_LIMIT = 4_096  # below this no comment layout holds a headline, a list and a code block


def fit_masked(build: Callable[[int], str], limit: int, m: Masker) -> str:
    """`build(budget)` masked whole (a secret may span two pieces; the marker line is kept) and
    shrunk until it fits `limit`: fail closed rather than post a body GitHub rejects with a 422."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}")
    budget = limit
    for _ in range(5):
        head, _, rest = build(budget).partition("\n")
        body = f"{head}\n{m(rest)}"
        if len(body) <= limit:
            return body
        budget -= 2 * (len(body) - limit)
    raise RuntimeError("body does not fit the limit")
