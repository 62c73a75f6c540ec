"""GitHub's bad minutes, end to end: every fault ends in one plan comment and final statuses.

The stand-in misbehaves on demand (5xx, rate limits, dropped connections, an answer lost after the
comment was stored); real Redis, real worker processes, real terraform.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from standin.faults import Fault
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, bot_bodies, infra_repo, plan_comment_shows, status
from tests.tfproject import apply_directly, main_tf

pytestmark = pytest.mark.e2e

PLAN_COMMENT = r"/repos/acme/infra/issues/\d+/comments"


def _plan_comments(stack: Stack, repo: Repo, number: int) -> list[str]:
    return [b for b in bot_bodies(stack, repo, number) if "plangate:plan " in b]


def _counts(conn: redis.Redis, key: str) -> dict[str, int]:
    return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in conn.hgetall(key).items()}


def _open_and_settle(stack: Stack, repo: Repo, state: Path, branch: str, fault: Fault) -> float:
    """Open a PR that drops `doomed` while `fault` is armed; the seconds until its gate status is final."""
    started = time.monotonic()
    pr = stack.gh.open_pr(repo, branch, "alice", branch, {"infra/main.tf": main_tf(state, {"keep": branch})})
    status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
    status(stack, repo, pr.head_sha, "plangate/plan", "success")
    plan_comment_shows(stack, repo, pr.head_sha)  # sent with the reports, it may land after them
    assert fault.hits == fault.times, f"{branch}: the fault was not met"
    assert len(_plan_comments(stack, repo, pr.number)) == 1, f"{branch}: not exactly one plan comment"
    return time.monotonic() - started


def test_every_fault_ends_in_one_comment_and_final_statuses(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, extra_env={"PLANGATE_REPORT": "statuses"}) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        statuses, files = r"/repos/acme/infra/statuses/\w+", r"/repos/acme/infra/pulls/\d+/files"
        faults: dict[str, Callable[[], Fault]] = {  # one at a time, each on a PR of its own
            "comment-502": lambda: gh.faults.add("POST", PLAN_COMMENT, status=502, times=2),
            "status-503": lambda: gh.faults.add("POST", statuses, status=503, times=2),
            "files-dropped": lambda: gh.faults.add("GET", files, drop=True),
            "secondary-limit": lambda: gh.faults.secondary_limit("POST", statuses, retry_after=2),
            "primary-limit": lambda: gh.faults.primary_limit("GET", files, reset_in_seconds=2),
            "comment-lost-after-store": lambda: gh.faults.add("POST", PLAN_COMMENT, after_store=True),
        }
        recovered = {}
        for name, arm in faults.items():
            gh.faults.clear()
            recovered[name] = _open_and_settle(stack, repo, state, name, arm())
        print("\nseconds from PR opened to final statuses, per fault:", {k: round(v, 1) for k, v in recovered.items()})
        assert gh.state.rate_limited == [r for r in gh.state.rate_limited if r.fault]  # no 403 but the injected ones
        retries = _counts(redis_conn, "plangate:metrics:github-retries")
        assert retries.get("POST issues/comments|502") == 2 and retries.get("POST statuses|503") == 2
        assert retries.get("GET pulls/files|connection") == 1
        # An answer lost after GitHub stored the comment is retried by the request (counted here) or, when
        # the drop surfaces as an error httpx does not call a transport error, by re-running the publish;
        # either way there is one comment (checked above for each fault).
        assert retries.get("POST issues/comments|connection", 0) <= 1
        limited = _counts(redis_conn, "plangate:metrics:github-rate-limited")
        assert limited == {"POST statuses|secondary": 1, "GET pulls/files|primary": 1}


def test_a_burst_of_fifteen_prs_gets_one_comment_each_and_no_rate_limit(tmp_path: Path, redis_url: str) -> None:
    projects = [f"p{i:02d}" for i in range(15)]
    for name in projects:
        apply_directly(tmp_path / "applied" / name, main_tf(tmp_path / "state" / f"{name}.tfstate", {"keep": "a"}))
    with running_stack(tmp_path, redis_url, workers=2, extra_env={"PLANGATE_REPORT": "statuses"}) as stack:
        gh = stack.gh
        files = {f"{n}/main.tf": main_tf(tmp_path / "state" / f"{n}.tfstate", {"keep": "a"}) for n in projects}
        repo = gh.create_repo("acme", "infra", files)
        before = len(gh.state.requests)
        started = time.monotonic()
        prs = []
        for name in projects:  # opened within a second, each touching its own project
            text = main_tf(tmp_path / "state" / f"{name}.tfstate", {"keep": "a", "new": name})
            prs.append(gh.open_pr(repo, name, "alice", f"Add to {name}", {f"{name}/main.tf": text}))
        for pr in prs:
            status(stack, repo, pr.head_sha, "plangate/destroy", "success")
            status(stack, repo, pr.head_sha, "plangate/plan", "success")
        wall = time.monotonic() - started
        for pr in prs:
            assert len(_plan_comments(stack, repo, pr.number)) == 1
        requests = gh.state.requests[before:]
        assert gh.state.rate_limited == []
        api = [r for r in requests if not r.path.endswith((".git/info/refs", "git-upload-pack"))]
        print(f"\nburst: 15 PRs, 2 workers: {wall:.1f}s to the last status; {len(api) / 15:.1f} API requests per PR")
