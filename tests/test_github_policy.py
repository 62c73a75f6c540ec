"""core.github_policy and the GitHub pacer: what may be repeated, how long to wait, how writes are paced."""

from __future__ import annotations

import time

import pytest
import redis

from core.github_policy import endpoint_class, rate_limit_wait, request_kind
from workers.adapters.github.pacing import Pacer

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("GET", "/repos/acme/infra/pulls/1/files", "read"),
        ("POST", "/repos/acme/infra/issues/12/comments", "create"),
        ("POST", "/repos/acme/infra/issues", "create"),
        ("PATCH", "/repos/acme/infra/issues/comments/5", "idempotent"),
        ("POST", "/repos/acme/infra/statuses/" + "a" * 40, "idempotent"),
        ("POST", "/repos/acme/infra/issues/comments/5/reactions", "idempotent"),
        ("POST", "/app/installations/3/access_tokens", "idempotent"),
        ("PATCH", "/repos/acme/infra/issues/12", "idempotent"),
    ],
)
def test_request_kinds(method: str, path: str, kind: str) -> None:
    assert request_kind(method, path) == kind


def test_endpoint_classes_drop_ids_and_shas() -> None:
    assert endpoint_class("POST", "/repos/acme/infra/statuses/" + "a" * 40) == "POST statuses"
    assert endpoint_class("GET", "/repos/acme/infra/pulls/12/files") == "GET pulls/files"
    assert endpoint_class("POST", "/repos/acme/infra/issues/12/comments") == "POST issues/comments"
    assert endpoint_class("GET", "/app") == "GET app"


def test_rate_limits_as_github_documents_them() -> None:
    primary = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 120)}
    assert rate_limit_wait(403, primary, "API rate limit exceeded", NOW, 1) == ("primary", 121.0)
    assert rate_limit_wait(403, {"Retry-After": "30"}, "secondary rate limit", NOW, 1) == ("secondary", 30.0)
    assert rate_limit_wait(429, {"retry-after": "0"}, "", NOW, 1) == ("secondary", 1.0)
    secondary = "You have exceeded a secondary rate limit."
    assert [rate_limit_wait(403, {}, secondary, NOW, n) for n in (1, 2, 5, 9)] == [
        ("secondary", 60.0),
        ("secondary", 120.0),
        ("secondary", 900.0),
        ("secondary", 900.0),
    ]
    assert rate_limit_wait(429, {}, "", NOW, 1) == ("secondary", 60.0)
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "12"}, "Resource not accessible", NOW, 1) is None
    assert rate_limit_wait(404, primary, "Not Found", NOW, 1) is None
    assert rate_limit_wait(502, {}, "Server Error", NOW, 1) is None


def test_a_lone_pr_is_never_paced_and_a_burst_is_spread_out(redis_conn: redis.Redis) -> None:
    one, other = Pacer(redis_conn, rate=10.0, burst=4), Pacer(redis_conn, rate=10.0, burst=4)
    assert [one.reserve(7) for _ in range(4)] == [0.0, 0.0, 0.0, 0.0]  # a PR's few writes go out at once
    waits = [other.reserve(7) for _ in range(3)]  # another worker shares the installation's bucket
    assert 0.05 < waits[0] < waits[1] < waits[2] <= 0.31
    assert one.reserve(8) == 0.0  # another installation has a bucket of its own
    time.sleep(0.5)
    assert one.reserve(7) == 0.0  # the bucket refills at the rate
