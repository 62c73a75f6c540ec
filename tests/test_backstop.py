"""core.render.backstop: whatever terraform printed, plangate's own secrets never reach GitHub."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from core.render.backstop import Backstop
from core.render.mask import MASK
from tests.keys import rsa_pem

WEBHOOK = "whsec-0123456789abcdef"
REDIS = "redis-pass-9f8e7d6c"


def _backstop() -> Backstop:
    return Backstop([rsa_pem(), WEBHOOK, REDIS])


def test_the_app_key_whole_partial_or_escaped_is_masked() -> None:
    key = rsa_pem()
    body_lines = [line for line in key.splitlines() if "-----" not in line]
    mask = _backstop()
    assert key.strip() not in mask(f"leak: {key}")
    assert body_lines[3] not in mask(f"a line of it: {body_lines[3]}")
    assert body_lines[5] not in mask("json: " + json.dumps(key))
    truncated = "\n".join(key.splitlines()[:4])
    assert body_lines[1] not in mask(truncated)


def test_any_pem_block_and_githubs_token_formats_are_masked() -> None:
    mask = Backstop()
    other = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAbc\n-----END EC PRIVATE KEY-----"
    assert mask(f"x {other} y") == f"x {MASK} y"
    for token in ("ghs_" + "a1" * 18, "ghu_" + "Z9" * 20, "github_pat_11AB" + "c" * 40):
        assert token not in mask(f"Authorization: token {token}")
    assert mask("ghs_short") == "ghs_short"  # not a token: too short to be one


def test_the_webhook_secret_and_redis_password_are_masked_in_every_field() -> None:
    data = {"body": f"REDIS_URL=redis://:{REDIS}@h", "title": WEBHOOK, "labels": [WEBHOOK], "n": 3}
    masked = _backstop().body(data)
    assert REDIS not in json.dumps(masked) and WEBHOOK not in json.dumps(masked)
    assert masked["n"] == 3 and list(masked) == ["body", "title", "labels", "n"]


@given(st.text(max_size=200))
def test_text_without_secrets_is_untouched(text: str) -> None:
    clean = text.replace("-----", "").replace("gh", "").replace("github_pat_", "")
    for secret in (WEBHOOK, REDIS):
        clean = clean.replace(secret, "")
    assert Backstop([WEBHOOK, REDIS])(clean) == clean
