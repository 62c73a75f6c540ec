"""The last line of defence: every text a job sends to GitHub is masked for plangate's own secrets.

Whatever a plan prints (a provider may echo its environment, an output may `file()` anything it can
read), no comment, issue or status description may carry the App key, the webhook secret, the
Redis password or an installation token. This runs after the renderers' own masking, on the JSON
body of every request (see workers.adapters.github.auth), so no code path can forget it; for the same
reason it is where control characters and bidi overrides are dropped (core.render.controls). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.render.controls import printable
from core.render.mask import Masker

# Any PEM block (a truncated one too: from its header to the end of its base64 lines), and GitHub's
# token formats: installation (ghs_), user-to-server (ghu_), OAuth (gho_), refresh (ghr_), PATs; and any
# signed JWT (plangate's OIDC tokens, an App JWT).
PATTERNS = (
    r"-----BEGIN [A-Z0-9 ]+-----(?:[\s\S]*?-----END [A-Z0-9 ]+-----|[A-Za-z0-9+/=\s\\]*)",
    r"\bgh[opsur]_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",  # a signed JWT: an OIDC or App token
)
_MIN_LINE = 16  # a secret's lines this long are masked one by one too (a partly printed key)


class Backstop:
    """A reusable mask for `secrets` (and for anything that looks like a key or a token)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        pieces: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            pieces.update((secret, printable(secret)))  # bodies lose their control characters first
            pieces.update(line.strip() for line in secret.splitlines() if len(line.strip()) >= _MIN_LINE)
        self._masker = Masker(sorted(pieces), PATTERNS)

    def __call__(self, text: str) -> str:
        return self._masker(text)

    def body(self, data: Any) -> Any:
        """A JSON request body with every string value printable and masked (keys are plangate's own)."""
        if isinstance(data, str):
            return self(printable(data))
        if isinstance(data, dict):
            return {k: self.body(v) for k, v in data.items()}
        if isinstance(data, list):
            return [self.body(v) for v in data]
        return data
