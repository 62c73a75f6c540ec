"""GitHub requests an approval and a merge's apply make (run by hand).

    .venv/bin/python -m benchmarks.bench_gate_requests

One PR that destroys a resource, against the stand-in with one web and one worker process and a
private Redis: @bob's `/approve-destroy` (from the comment to the gate's status), then the merge
(from the push to `plangate/apply` on the merge commit). Prints each count and the requests by
method and path, as the stand-in received them.
"""

from __future__ import annotations

import collections
import tempfile
import time
from pathlib import Path

from standin.facade import StandIn
from standin.local_redis import private_redis
from standin.stack import running_stack
from tests.e2e import applied_state, comment_and_wait, infra_repo, next_second, planned, status
from tests.tfproject import main_tf

SETTLE = 2.0  # seconds for what the last status set off (a reaction, a run log) to reach the stand-in


def _since(gh: StandIn, start: int) -> collections.Counter[str]:
    time.sleep(SETTLE)
    with gh.state.lock:
        made = list(gh.state.requests)[start:]
    return collections.Counter(f"{r.method} {r.path.split('?')[0]}" for r in made)


def _print(what: str, counted: collections.Counter[str]) -> None:
    print(f"{what}: {sum(counted.values())} requests")
    for request, n in sorted(counted.items()):
        print(f"  {n} × {request}")


def main() -> int:
    with private_redis() as url, tempfile.TemporaryDirectory() as d:
        root = Path(d)
        state = applied_state(root)
        with running_stack(root, url) as stack:
            gh = stack.gh
            repo = infra_repo(stack, state)
            pr = gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
            planned(stack, repo, pr.head_sha)
            time.sleep(SETTLE)
            next_second()
            start = len(gh.state.requests)
            assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
            status(stack, repo, pr.head_sha, "plangate/destroy", "success")
            _print("approval", _since(gh, start))
            start = len(gh.state.requests)
            merged = gh.merge_pr(pr, merged_by="bob")
            status(stack, repo, merged, "plangate/apply", "success")
            _print("merge and apply", _since(gh, start))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
