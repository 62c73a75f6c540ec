"""Bot overhead of a PR plan, and GitHub API calls per PR push (run by hand).

    .venv/bin/python -m benchmarks.bench_plan_overhead [--rounds 3]

Overhead: delivery of `pull_request` → final `plangate/destroy` status, through the stand-in,
one `plangate web`, one `plangate worker` and real Redis, against a bare
`terraform init && plan -out && show -json` of the same project: a PR opened (the targets), then a
push to it (its comment known, so edited). Targets: a fixed cost of at most
0.15 s, so ≤ 1.9× at 20 resources and ≤ 1.05× at 2,000.
API calls: requests the worker makes to "GitHub" for one push to a PR with one project,
token and comment already known. Target ≤ 5.
`--github-latency MS` delays each of the stand-in's answers (API and git) by MS, as the network to
GitHub does; the targets are for 0, the stand-in answering from this machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from standin.facade import StandIn
from standin.local_redis import private_redis
from standin.stack import Stack, running_stack
from workers.adapters.github.pacing import BURST, RATE

POLL = 0.005  # seconds between looks at the statuses: a coarser poll would be measured too


def _project(state: Path, n: int, value: str) -> str:
    head = f'terraform {{\n  backend "local" {{\n    path = "{state}"\n  }}\n}}\n'
    body = "".join(f'resource "terraform_data" "r{i}" {{\n  input = "{value}-{i}"\n}}\n' for i in range(n))
    return head + body


def _bare(tool: str, text: str, root: Path) -> float:
    work = Path(tempfile.mkdtemp(dir=root))
    (work / "main.tf").write_text(text)
    env = {"PATH": os.environ["PATH"], "HOME": str(root), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    started = time.perf_counter()
    steps = (["init", "-input=false", "-no-color"], ["plan", "-input=false", "-no-color", "-out=p.tfplan"])
    for args in (*steps, ["show", "-json", "p.tfplan"]):  # as plangate runs them (colour costs time)
        subprocess.run([tool, *args], cwd=work, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    shutil.rmtree(work)
    return elapsed


def _settled(stack: Stack, repo: object, sha: str) -> bool:
    statuses = stack.gh.reports(repo, sha)  # type: ignore[arg-type]
    return (
        "plangate/destroy" in statuses
        and statuses.get("plangate/plan", None) is not None
        and (statuses["plangate/plan"].state != "pending")
    )


def _delivered(gh: StandIn, number: int, action: str = "opened") -> float:
    """When the stand-in last sent `pull_request.<action>` for PR #number (the clock starts at the delivery)."""
    sent = [
        d.sent_at
        for d in gh.outbox
        if d.event == "pull_request" and d.payload["action"] == action and d.payload["number"] == number
    ]
    assert sent and sent[-1] is not None, f"PR #{number} was never delivered"
    return sent[-1]


def main() -> int:
    opts = argparse.ArgumentParser()
    opts.add_argument("--rounds", type=int, default=3)
    opts.add_argument("--resources", type=int, default=20)
    opts.add_argument("--github-latency", type=float, default=0.0, metavar="MS")
    args = opts.parse_args()
    tool = shutil.which("tofu") or shutil.which("terraform")
    if tool is None:
        print("terraform or tofu is required")
        return 2
    with tempfile.TemporaryDirectory() as tmp, private_redis() as redis_url:
        root = Path(tmp)
        state = root / "state" / "terraform.tfstate"
        with running_stack(root, redis_url) as stack:
            gh = stack.gh
            gh.faults.latency = args.github_latency / 1000
            repo = gh.create_repo("acme", "infra", {"infra/main.tf": _project(state, args.resources, "v0")})
            bot, pushed, bare = [], [], []
            for round_ in range(args.rounds):
                time.sleep(BURST / RATE)  # GitHub writes are paced per installation: start each round unpaced
                text = _project(state, args.resources, f"v{round_ + 1}")
                bare.append(_bare(tool, text, root))
                pr = gh.open_pr(repo, f"change-{round_}", "alice", "Change", {"infra/main.tf": text})
                head = pr.head_sha
                stack.wait_for("the plan", lambda: _settled(stack, repo, head), every=POLL)  # noqa: B023
                bot.append(time.perf_counter() - _delivered(gh, pr.number))
                time.sleep(BURST / RATE)
                head = gh.push_pr(pr, {"infra/main.tf": _project(state, args.resources, f"w{round_ + 1}")})
                stack.wait_for("the push's plan", lambda: _settled(stack, repo, head), every=POLL)  # noqa: B023
                pushed.append(time.perf_counter() - _delivered(gh, pr.number, "synchronize"))
            before = len(gh.state.requests)
            sha = gh.push_pr(pr, {"infra/main.tf": _project(state, args.resources, "pushed")})
            stack.wait_for("the re-plan", lambda: _settled(stack, repo, sha), every=POLL)
            time.sleep(1)  # the stand-in logs a request once its answer is sent: after the statuses show
            api = [r for r in gh.state.requests[before:] if r.auth != "basic"]
    ratio = statistics.median(bot) / statistics.median(bare)
    print(f"project: {args.resources} terraform_data resources, {Path(tool).name}; {args.rounds} rounds, medians")
    if args.github_latency:
        print(f"GitHub answers after {args.github_latency:.0f} ms (API and git)")
    print(f"bare init+plan+show -json: {statistics.median(bare):.2f} s")
    target = 1.9 if args.resources < 2000 else 1.05
    fixed = statistics.median(bot) - statistics.median(bare)
    print(f"delivery → final status:   {statistics.median(bot):.2f} s  ratio {ratio:.2f}× (target ≤ {target}×)")
    print(f"fixed cost per plan:        {fixed:.2f} s (target ≤ 0.15 s)")
    again = statistics.median(pushed)
    print(f"a push to that PR → final status: {again:.2f} s  ratio {again / statistics.median(bare):.2f}×")
    print(f"API requests for one PR push (token cached): {len(api)} (target ≤ 5)")
    for r in api:
        print(f"  {r.method} {r.path} → {r.status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
