"""A GitHub outage of real length in the middle of a publish and of an apply's report (run by hand).

    .venv/bin/python -m benchmarks.bench_outage [--outage 600]

The default settings (one request retried for 120 s, an outage window of an hour), one web and one
worker process, a private Redis, real terraform. GitHub (the stand-in) goes down while the PR's plan
makes its last step, and again when the merge's `terraform apply` has just finished; each time it
comes back after `--outage` seconds. Prints, for each, how long after GitHub came back the true
reports were final, and how many plan comments and applies there were (one each).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from standin.local_redis import private_redis
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, bot_bodies, infra_repo
from tests.tfproject import main_tf, tool

WRAPPER = """#!/bin/sh
if [ "$1" = "show" ] && [ ! -e "{marks}/showing" ]; then touch "{marks}/showing"; sleep 2; fi
if [ "$1" = "apply" ]; then "{real}" "$@"; code=$?; echo apply >> "{marks}/applies"; sleep 1; exit $code; fi
exec "{real}" "$@"
"""


def _down_for(stack: Stack, seconds: float) -> float:
    """GitHub out for `seconds`; when it came back (monotonic)."""
    stack.gh.faults.outage()
    time.sleep(seconds)
    stack.gh.faults.back()
    return time.monotonic()


def _final(stack: Stack, repo: Repo, sha: str, context: str) -> str:
    """Wait (up to 15 minutes: the longest pause between comebacks, and one request's retries) until
    `context` on `sha` is no longer pending; its state."""

    def probe() -> str | None:
        found = stack.gh.reports(repo, sha).get(context)
        return found.state if found is not None and found.state != "pending" else None

    return stack.wait_for(f"{context} final", probe, timeout=900)


def _comments(stack: Stack, repo: Repo, number: int, marker: str) -> int:
    return len([b for b in bot_bodies(stack, repo, number) if marker in b])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, default=600.0, help="seconds GitHub is down each time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, private_redis() as redis_url:
        root = Path(tmp)
        marks, bin_dir = root / "marks", root / "bin"
        marks.mkdir()
        bin_dir.mkdir()
        (bin_dir / "terraform").write_text(WRAPPER.format(marks=marks, real=tool()))
        (bin_dir / "terraform").chmod(0o755)
        state = applied_state(root)
        env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PLANGATE_REPORT": "statuses"}
        with running_stack(root, redis_url, extra_env=env) as stack:
            repo = infra_repo(stack, state)
            wanted = {"keep": "a", "doomed": "b", "new": "c"}
            pr = stack.gh.open_pr(repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, wanted)})
            stack.wait_for("the plan's last step", (marks / "showing").exists, timeout=300)
            back = _down_for(stack, args.outage)
            plan = _final(stack, repo, pr.head_sha, "plangate/plan")
            took = time.monotonic() - back
            print(
                f"publish: plangate/plan {plan} {took:.0f} s after a {args.outage:.0f} s outage ended; "
                f"{_comments(stack, repo, pr.number, 'plangate:plan ')} plan comment(s)"
            )
            merged = stack.gh.merge_pr(pr, method="merge")
            stack.wait_for("terraform apply", lambda: (marks / "applies").exists() or None, timeout=300)
            back = _down_for(stack, args.outage)
            applied = _final(stack, repo, merged, "plangate/apply")
            took, applies = time.monotonic() - back, (marks / "applies").read_text().count("apply")
            results = _comments(stack, repo, pr.number, "plangate:apply-result")
            print(
                f"apply: plangate/apply {applied} {took:.0f} s after a {args.outage:.0f} s outage ended; "
                f"{results} result comment(s), {applies} apply"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
