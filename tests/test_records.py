"""plumbing.records: gate records count only when the App sealed them, for that very key."""

from __future__ import annotations

import logging

import pytest
import redis

from plumbing.records import Records
from standin.keys import new_private_key_pem
from tests.keys import rsa_pem

KEY = rsa_pem()


def test_a_sealed_record_reads_back_and_only_under_its_own_key(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    records.set("plangate:approvals:1:2:abc", '[{"approver": "bob"}]', ex=60)
    assert records.get("plangate:approvals:1:2:abc") == '[{"approver": "bob"}]'
    assert records.get_json("plangate:approvals:1:2:abc") == [{"approver": "bob"}]
    redis_conn.copy("plangate:approvals:1:2:abc", "plangate:approvals:1:2:other")
    assert records.get("plangate:approvals:1:2:other") is None  # a valid seal moved to another SHA
    assert records.get("plangate:absent") is None


def test_many_records_read_at_once_each_under_its_own_key(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    records.set("plangate:applied:1:a", "sha-a")
    records.set("plangate:applied:1:b", "sha-b")
    redis_conn.set("plangate:applied:1:forged", "sha-x")  # unsigned, as anyone with Redis access would write it
    redis_conn.copy("plangate:applied:1:a", "plangate:applied:1:moved")
    names = ["plangate:applied:1:b", "plangate:absent", "plangate:applied:1:forged", "plangate:applied:1:moved"]
    assert records.get_many([*names, "plangate:applied:1:a"]) == ["sha-b", None, None, None, "sha-a"]
    assert records.get_many([]) == []


@pytest.mark.parametrize(
    "raw",
    [
        b'[{"approver": "bob"}]',  # unsigned, as anyone with Redis access would write it
        b's1.AAAA.[{"approver": "bob"}]',  # a signature that is not one
        b"s1.not base64!.x",
    ],
)
def test_unsigned_or_badly_signed_records_count_for_nothing_and_are_logged(
    raw: bytes, redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    records = Records(redis_conn, KEY)
    redis_conn.set("plangate:approvals:1:2:abc", raw)
    with caplog.at_level(logging.WARNING, logger="plangate.records"):
        assert records.get("plangate:approvals:1:2:abc") is None
    assert "unsigned or badly signed" in caplog.text and "plangate:approvals:1:2:abc" in caplog.text


def test_a_changed_payload_or_another_key_breaks_the_seal(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    records.set("k", "bob")
    sealed = redis_conn.get("k")
    assert isinstance(sealed, bytes)
    redis_conn.set("k", sealed.replace(b"bob", b"eve"))
    assert records.get("k") is None
    records.set("k", "bob")
    assert Records(redis_conn, new_private_key_pem()).get("k") is None


def test_hash_fields_are_sealed_one_by_one(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    records.hset("plangate:blocked:1:7", "infra", '{"a": 1}')
    redis_conn.hset("plangate:blocked:1:7", "forged", '{"a": 2}')
    assert records.hgetall("plangate:blocked:1:7") == {"infra": '{"a": 1}'}


def test_secrets_are_encrypted_at_rest(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    blob = records.encrypt("plangate:installation-token:9", "ghs_secret-token")
    assert b"ghs_secret-token" not in blob
    assert records.decrypt("plangate:installation-token:9", blob) == "ghs_secret-token"
    assert records.decrypt("plangate:installation-token:8", blob) is None  # bound to its key
    assert records.decrypt("plangate:installation-token:9", b'{"token": "ghs_planted"}') is None
