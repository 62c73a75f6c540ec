"""One PR touching N projects of a monorepo, planned by W workers (run by hand).

    .venv/bin/python -m benchmarks.bench_monorepo [--projects 200] [--workers 2]

Each project is one directory with one `terraform_data` in its own local state; the PR removes that
resource and adds another, so every project has a destroy. Measured in one run:

* wall time from the `pull_request` delivery to the final `plangate/plan` and `plangate/destroy`,
  against the sum of a bare `terraform init && plan -out && show -json` of every project divided by
  the worker count (target ≤ 1.3×);
* the same steps W at a time, bare and through plangate's runner (bubblewrap and the memory cap,
  no bot): this machine's floor with and without the sandbox;
* all three floors once before the bot's run and once after it, since these machines drift by a
  third within minutes: each ratio is against the mean of the two, and the drift is printed;
* the GitHub requests the workers made, the plan comment's parts apart from the rest;
* the RSS of each worker process (the parent, which outlives every job) before and after, and the
  largest sampled while the PR was planned (work horses included);
* that the plan comment names every project's destroy and each part fits GitHub's 65,536 characters;
* then a push changing one project: the time to its final statuses, with every other plan carried
  forward (smart re-planning) instead of made again.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import redis

from benchmarks.bench_plan_overhead import POLL, _bare, _delivered, _settled
from benchmarks.bench_sandbox import runner
from core.sandbox_paths import SandboxPaths
from standin.local_redis import private_redis
from standin.sample import main_tf
from standin.stack import running_stack
from tests.e2e import plan_jobs, plans_ended
from tests.tfproject import apply_directly
from workers.adapters.github.pacing import BURST, RATE
from workers.adapters.terraform.sandbox import Sandbox, prepare

TARGET = 1.3
GITHUB_MAX_BODY = 65_536


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):  # it ended meanwhile
        pass
    return 0


def _family(pid: int) -> list[int]:
    """`pid` and its children (a worker and its current work horse)."""
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (FileNotFoundError, ProcessLookupError):  # it ended meanwhile
        found = []
    return [pid, *(int(c) for c in found)]


class _RssSampler:
    """The largest RSS of any worker process or work horse, sampled every 0.2 s."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.peak, self._stop = pids, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for pid in self.pids:
                for member in _family(pid):
                    self.peak = max(self.peak, _rss_kib(member))


def _boxed(sandbox: Sandbox, root: Path, text: str, states: Path) -> float:
    """init+plan+show of one project through plangate's runner in `sandbox`, in one sandbox as a plan
    job runs them (seconds)."""
    work = Path(tempfile.mkdtemp(dir=root))
    (work / "main.tf").write_text(text)
    (work / "plan").mkdir()
    planfile = work / "plan" / "p.tfplan"
    started = time.perf_counter()
    with runner(sandbox, root, work, states).one_sandbox(work, work / "scratch", planfile.parent, work) as tf:
        tf.init(work)
        tf.plan(work, planfile)
        tf.show_json(work, planfile)
    elapsed = time.perf_counter() - started
    shutil.rmtree(work)
    return elapsed


def _at_a_time(workers: int, step: Callable[[str], float], texts: list[str]) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:  # what this machine does W at a time
        list(pool.map(step, texts))
    return time.perf_counter() - started


@dataclass(frozen=True)
class Floors:
    """One measurement of the floors (seconds): bare one after another, bare and sandboxed W at a time."""

    bare: list[float]
    parallel: float
    boxed: float


def _floors(tool: str, root: Path, texts: list[str], workers: int) -> Floors:
    bare = [_bare(tool, text, root) for text in texts]
    parallel = _at_a_time(workers, lambda text: _bare(tool, text, root), texts)
    sandbox = prepare("bwrap", SandboxPaths(), root / "probe")
    boxed = _at_a_time(workers, lambda t: _boxed(sandbox, root, t, root / "state"), texts)
    return Floors(bare, parallel, boxed)


def main() -> int:
    opts = argparse.ArgumentParser()
    opts.add_argument("--projects", type=int, default=200)
    opts.add_argument("--workers", type=int, default=2)
    args = opts.parse_args()
    tool = shutil.which("tofu") or shutil.which("terraform")
    if tool is None:
        print("terraform or tofu is required")
        return 2
    names = [f"p{i:03d}" for i in range(args.projects)]
    with tempfile.TemporaryDirectory() as tmp, private_redis() as redis_url:
        root = Path(tmp)
        states = {name: root / "state" / f"{name}.tfstate" for name in names}
        apply_directly(root / "applied", main_tf(states[names[0]], {"old": "x"}))
        for name in names[1:]:  # every project starts from the same applied state, each in its own file
            shutil.copyfile(states[names[0]], states[name])
        before = {f"{n}/main.tf": main_tf(states[n], {"old": "x"}) for n in names}
        after = {f"{n}/main.tf": main_tf(states[n], {"new": "x"}) for n in names}
        print(f"bare init+plan+show of {args.projects} projects, one after another ...", flush=True)
        first_floors = _floors(tool, root, list(after.values()), args.workers)
        with running_stack(root, redis_url, workers=args.workers) as stack:
            gh = stack.gh
            repo = gh.create_repo("acme", "monorepo", before)
            pids = [w.pid for w in stack.workers]
            rss_before = [_rss_kib(p) for p in pids]
            time.sleep(BURST / RATE)  # GitHub writes are paced per installation: start unpaced
            first = len(gh.state.requests)
            with _RssSampler(pids) as sampler:
                pr = gh.open_pr(repo, "everything", "alice", "Touch every project", after)
                stack.wait_for("the plan", lambda: _settled(stack, repo, pr.head_sha), timeout=3600, every=POLL)
                wall = time.perf_counter() - _delivered(gh, pr.number)
            rss_after = [_rss_kib(p) for p in pids]
            time.sleep(1)  # the stand-in logs a request once its answer is sent: after the statuses show
            requests = [r for r in gh.state.requests[first:] if r.auth != "basic"]
            comments = [c.body for c in gh.comments_on(repo, pr.number) if c.user.login == "plangate[bot]"]
            time.sleep(BURST / RATE)
            one = names[0]
            sha = gh.push_pr(pr, {f"{one}/main.tf": main_tf(states[one], {"newer": "x"})})
            stack.wait_for("the re-plan", lambda: _settled(stack, repo, sha), timeout=3600, every=POLL)
            replan = time.perf_counter() - _delivered(gh, pr.number, "synchronize")
            conn = redis.Redis.from_url(redis_url)
            plans_ended(stack, conn, sha, 1)  # a dispatch that plans in place ends just after the statuses
            time.sleep(1)  # and any other plan job of the push, had one run
            replanned = len(plan_jobs(conn, sha))
        print("the floors again, after the bot's run ...", flush=True)
        floors = (first_floors, _floors(tool, root, list(after.values()), args.workers))
    bare = [statistics.mean(pair) for pair in zip(*(f.bare for f in floors), strict=True)]
    floor = sum(bare) / args.workers
    parallel = statistics.mean(f.parallel for f in floors)
    boxed = statistics.mean(f.boxed for f in floors)
    kinds = Counter(f"{r.method} {_shape(r.path)}" for r in requests)
    comment_calls = sum(n for kind, n in kinds.items() if "/comments" in kind)
    print(f"{args.projects} projects, {args.workers} workers, {Path(tool).name}")
    print(f"bare init+plan+show: sum {sum(bare):.1f} s (median {statistics.median(bare):.2f} s per project)")
    early, late = floors
    print(
        f"  the floors before and after the bot's run (the machine's drift): bare sum {sum(early.bare):.1f} and "
        f"{sum(late.bare):.1f} s, bare {args.workers} at a time {early.parallel:.1f} and {late.parallel:.1f} s, "
        f"sandboxed {early.boxed:.1f} and {late.boxed:.1f} s; every ratio below is against their mean"
    )
    print(
        f"bare, {args.workers} at a time: {parallel:.1f} s = {parallel / floor:.2f}× sum/workers "
        "(terraform alone: this machine's floor)"
    )
    print(
        f"sandboxed, {args.workers} at a time: {boxed:.1f} s = {boxed / floor:.2f}× sum/workers = "
        f"{boxed / parallel:.2f}× bare {args.workers} at a time "
        "(plangate's runner, bubblewrap and memory cap, no bot: the floor with the sandbox)"
    )
    print(f"delivery → final statuses: {wall:.1f} s = {wall / floor:.2f}× sum/workers (target ≤ {TARGET}×)")
    print(f"GitHub requests: {len(requests)}, of which {comment_calls} for the {len(comments)} comment part(s)")
    for kind, n in sorted(kinds.items()):
        print(f"  {n:4d}  {kind}")
    print(
        f"worker RSS (MiB) before {_mib(rss_before)}, after {_mib(rss_after)}; peak sampled {sampler.peak / 1024:.0f}"
    )
    missing = [n for n in names if not any(f"`{n}`" in body or f" {n} " in body for body in comments)]
    too_long = [len(body) for body in comments if len(body) > GITHUB_MAX_BODY]
    print(
        f"comment: {len(comments)} part(s), longest {max(map(len, comments), default=0):,} chars; "
        f"projects not named: {len(missing)}; parts over GitHub's limit: {len(too_long)}"
    )
    print(
        f"push changing 1 project: {replan:.1f} s to final statuses ({replan / wall:.2f}× the first plan), "
        f"{replanned} plan job(s) ran (expected 1): {args.projects - replanned} of {args.projects} carried"
    )
    return 0 if not missing and not too_long and replanned == 1 else 1


def _shape(path: str) -> str:
    """A request path with its numbers and SHAs folded, so requests group by endpoint."""
    parts = [("{n}" if p.isdigit() else "{sha}" if len(p) == 40 else p) for p in path.split("?")[0].split("/")]
    return "/".join(parts)


def _mib(values: list[int]) -> str:
    return ", ".join(f"{v / 1024:.0f}" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
