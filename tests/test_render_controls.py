"""Control characters and bidi overrides never reach GitHub, and plangate's sealed markers still open."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from core.approval_markers import approval_from_marker
from core.approvals import Approval, approval_marker
from core.render.backstop import Backstop
from core.render.controls import printable
from core.render.marker import open_sealed, parse_marker, sealed_marker
from core.render.mask import MASK
from core.render.replies import render_approved
from tests.test_render import make_plan, project, rc, render

SHA = "0123456789abcdef0123456789abcdef01234567"
KEY = b"k" * 32
# NUL, ESC, the rest of C0 but tab and newline, DEL, C1, the bidi overrides and isolates
DROPPED = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, *range(0x80, 0xA0))]
DROPPED += [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
HOSTILE = "ok \x00NUL \x1b[31mred\x1b[0m \x07bell \x7fdel \x85nel \u202eevil\u202c \u2066iso\u2069 end"


def test_every_control_and_bidi_override_is_dropped_and_tabs_and_newlines_kept() -> None:
    assert printable("".join(DROPPED)) == ""
    assert printable("a\tb\nc\r\nd\re") == "a\tb\nc\nd\ne"
    assert printable(HOSTILE) == "ok NUL [31mred[0m bell del nel evil iso end"
    assert printable("café ✓ 日本 \u200d👍 \u00a0") == "café ✓ 日本 \u200d👍 \u00a0"  # text, not control


@given(st.text())
def test_printable_leaves_no_dropped_character_and_changes_nothing_else(text: str) -> None:
    out = printable(text)
    assert not set(out) & set(DROPPED) and "\r" not in out
    assert printable(out) == out
    kept = text.replace("\r\n", "\n").replace("\r", "\n")
    assert out == "".join(ch for ch in kept if ch not in DROPPED)


def test_every_string_of_a_request_body_is_made_printable() -> None:
    data = {"body": HOSTILE, "output": {"title": "a\x1bb", "summary": "\u202e1"}, "labels": ["x\x00"], "n": 1}
    sent = Backstop().body(data)
    assert sent == {"body": printable(HOSTILE), "output": {"title": "ab", "summary": "1"}, "labels": ["x"], "n": 1}


def test_a_secret_is_masked_though_control_characters_were_printed_inside_or_around_it() -> None:
    secret = "s3cr3t-\x1bvalue-0123"
    sent = Backstop([secret]).body({"body": f"leak: {secret} and \x00{secret}\x00"})
    assert "s3cr3t" not in sent["body"] and sent["body"].count(MASK) == 2


def test_a_plan_comment_with_hostile_terraform_output_keeps_its_marker() -> None:
    plan = make_plan(rc('a.b["\x1b[1mk\u202e"]', "delete"))
    (body,) = render(project(plan, f'  - a.b["k"] {{\n      + x = "{HOSTILE}"\n    }}', error=None))
    assert "\x1b" in body  # rendering quotes what terraform wrote; the client's backstop drops it
    sent = Backstop().body({"body": body})["body"]
    assert not set(sent) & set(DROPPED)
    assert parse_marker(sent) == parse_marker(body)


def test_sealed_markers_open_after_the_backstop_with_every_field_intact() -> None:
    fields = {"address": 'a.b["\x1b\x00\u202e"]', "note": HOSTILE, "n": 3}
    body = sealed_marker("approval", KEY, "ctx", **fields) + "\n" + HOSTILE
    sent = Backstop().body({"body": body})["body"]
    assert open_sealed(sent, "approval", KEY, "ctx") == fields
    assert sent != body  # the text around the marker did change


def test_an_approval_of_addresses_holding_controls_still_verifies_once_sent() -> None:
    seen = frozenset({("dns@default:infra", 'aws_x.y["\x1b\u202ek"]', "0" * 32)})
    approval = Approval("alice", SHA, seen, plan="p" * 32)
    seal = approval_marker(approval, key=KEY, repo_id=1, number=2, reply_to=9)
    sent = Backstop().body(json.loads(json.dumps({"body": render_approved(approval, marker=seal)})))["body"]
    found = approval_from_marker(sent, key=KEY, repo_id=1, number=2, sha=SHA)
    assert found is not None and found.seen == seen
