"""A PR of three projects end to end (web, an RQ worker, terraform in the sandbox, the stand-in): while
one project's plan is slow, the PR's one plan comment shows how far the plan is, linking the running
project's live run page, and the publish then replaces it with the plan, in a bounded number of edits."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import redis

from core.runs import run_id
from standin.stack import running_stack
from tests.e2e import BOT, plan_jobs, planned, progress
from tests.tfproject import tool

pytestmark = pytest.mark.e2e

URL = "https://gate.example.org"
NAMES = ("a", "b", "c")  # on one worker: a and b in a batch, then c in a job of its own
# b's plan takes over one progress turn (so an edit after it is due); c's waits for the test's go.
SLOW = """case "$(pwd)" in
  */b) if [ "$1" = "plan" ]; then sleep 11; fi;;
  */c) if [ "$1" = "plan" ]; then
         i=0; while [ ! -e "$MARKS/go" ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
       fi;;
esac"""


def _one(value: str) -> str:
    return f'resource "terraform_data" "one" {{\n  input = "{value}"\n}}\n'


def _wrapper(tmp_path: Path) -> dict[str, str]:
    """`terraform` = SLOW, then the real one, first on PATH; `marks/` is writable to every step."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "terraform"
    script.write_text(f'#!/bin/sh\nREAL={tool()}\nMARKS={tmp_path / "marks"}\n{SLOW}\nexec "$REAL" "$@"\n')
    script.chmod(0o755)
    (tmp_path / "marks").mkdir(exist_ok=True)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_slow_project_shows_progress_in_the_plan_comment_until_the_plan_replaces_it(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    env = {**_wrapper(tmp_path), "PLANGATE_PUBLIC_URL": URL}
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {f"{n}/main.tf": _one("1") for n in NAMES})
        before = len(gh.state.requests)
        pr = gh.open_pr(repo, "all", "alice", "Change every project", {f"{n}/main.tf": _one("2") for n in NAMES})

        def bodies() -> list[str]:
            return [c.body for c in gh.comments_on(repo, pr.number) if c.user.login == BOT]

        first = stack.wait_for("the progress comment", lambda: [b for b in bodies() if progress(b)] or None)
        assert len(first) == 1 and "Planning 3 projects at" in first[0]
        assert pr.head_sha[:7] in first[0] and "plangate:approval" not in first[0]
        shown = stack.wait_for("2 of 3 done", lambda: [b for b in bodies() if "2 of 3 done" in b] or None)
        (body,) = shown
        assert progress(body) and "`c`" in body and "`a`" not in body and "`b`" not in body
        (link,) = re.findall(rf"\({re.escape(URL)}/runs/([A-Za-z0-9_-]{{24}})\)", body)
        assert gh.reports(repo, pr.head_sha)["plangate/plan"].state == "pending"  # as long as it plans

        (tmp_path / "marks" / "go").touch()
        assert planned(stack, repo, pr.head_sha)["plangate/plan"] == "success"
        (comment,) = [c for c in gh.comments_on(repo, pr.number) if c.user.login == BOT]
        assert not progress(comment.body) and "3 projects planned" in comment.body
        assert [progress(e.body) for e in comment.edits] == [True] * len(comment.edits)  # the plan came last
        writes = [r for r in gh.state.requests[before:] if r.method in ("POST", "PATCH") and "/comments" in r.path]
        assert [r.method for r in writes][:1] == ["POST"] and len(writes) <= 4, writes  # 0 of 3, ≤2 more, the plan

        (job,) = [j for j in plan_jobs(redis_conn, pr.head_sha) if j.kwargs.get("project") is not None]
        assert job.kwargs["project"].dir == "c"
        assert link == run_id(job.id, job.kwargs["project"].identity)  # the run page of the job planning c
