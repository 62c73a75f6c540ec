"""What plangate wrote in its comments, kept sealed so that someone else's change is noticed and put back
(workers/adapters/store/written.py, workers/flows/restore.with_note)."""

from __future__ import annotations

from typing import Any

import redis

from plumbing.records import Records
from standin.keys import new_private_key_pem
from tests.keys import rsa_pem
from workers.adapters.store import written
from workers.flows.restore import MAX_BODY, with_note

BODY = '<!-- plangate:plan {"part": 1} -->\n## plangate plan\n\n1 to destroy\n'


def answer(cid: int, body: str = BODY, at: str = "2026-12-02T10:00:00Z") -> dict[str, Any]:
    return {"id": cid, "body": body, "updated_at": at, "created_at": "2026-12-02T09:00:00Z"}


def test_a_comment_as_written_matches_and_any_change_does_not(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, rsa_pem())
    was = written.remember(records, 1, answer(5), 7)
    assert written.lookup(records, 1, 5) == was and was.number == 7 and was.body == BODY
    assert written.matches(was, answer(5))
    assert written.matches(was, answer(5, BODY.replace("\n", "\r\n")))  # a CRLF round trip is no change
    assert not written.matches(was, answer(5, BODY.replace("1 to destroy", "0 to destroy")))
    assert not written.matches(was, answer(5, at="2026-12-02T10:00:01Z"))  # edited back to the same text
    assert written.altered(records, 1, [answer(5), answer(6, "someone else's"), answer(5, "changed")]) == {5}


def test_a_record_that_does_not_verify_is_not_known(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, rsa_pem())
    written.remember(records, 1, answer(5), 7)
    assert written.lookup(Records(redis_conn, new_private_key_pem()), 1, 5) is None  # sealed with another key
    redis_conn.set("plangate:written:1:6", '{"number": 7, "digest": "x", "at": "", "body": ""}')  # unsealed
    assert written.lookup(records, 1, 6) is None
    assert written.altered(records, 1, [answer(6, "anything")]) == set()


def test_restored_text_says_who_changed_it_and_keeps_the_marker_first(redis_conn: redis.Redis) -> None:
    noted = with_note(BODY, "mallory", "2026-12-02T10:00:05Z", deleted=False)
    first, second = noted.splitlines()[:2]
    assert first == BODY.splitlines()[0] and second == "> [!NOTE]"
    assert "@mallory edited this comment at 2026-12-02T10:00:05Z; plangate put its own text back." in noted
    assert "plangate posted it again" in with_note(BODY, None, None, deleted=True)
    assert with_note("x" * MAX_BODY, "m", None, deleted=False) == "x" * MAX_BODY  # no room: the text alone
    twice = with_note(noted, "eve", None, deleted=False)
    assert twice.count("> [!NOTE]") == 1 and "@eve edited this comment; plangate" in twice and "mallory" not in twice
    assert twice.endswith(BODY.partition("\n")[2])
    records = Records(redis_conn, rsa_pem())
    again = written.remember(
        records, 1, answer(9, noted, "2026-12-02T10:00:06Z"), 7, restored_from="mallory", restoring=True
    )
    assert again.restored == "2026-12-02T10:00:06Z" and again.restored_from == "mallory"
    assert written.lookup(records, 1, 9) == again


def test_an_issue_is_judged_by_its_body_alone(redis_conn: redis.Redis) -> None:
    """GitHub moves an issue's `updated_at` with every comment on it (an /approve-destroy included)."""
    records = Records(redis_conn, rsa_pem())
    was = written.remember(records, 1, {"number": 3, "body": BODY, "updated_at": "2026-12-02T10:00:00Z"}, 3, issue=True)
    assert written.lookup_issue(records, 1, 3) == was
    assert written.matches(was, {"body": BODY, "updated_at": "2026-12-02T11:00:00Z"}, issue=True)
    assert not written.matches(was, {"body": BODY + "x", "updated_at": "2026-12-02T10:00:00Z"}, issue=True)
