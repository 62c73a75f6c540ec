"""One PR touching N projects of a monorepo, planned by W worker processes, terraform a stand-in (run by hand).

    .venv/bin/python -m benchmarks.bench_scale [--projects 2000] [--workers 20] [--step-seconds 1]
    .venv/bin/python -m benchmarks.bench_scale --real   # bench_monorepo: real terraform, 200 projects, 2 workers

What is measured is plangate's orchestration at a scale this machine's cores could not plan with
real terraform: `terraform` is tests/fakes/terraform_steps.sh, first on the workers' PATH, which sleeps
`--step-seconds` per step and otherwise does what terraform does for the change of bench_monorepo's
projects (one destroy and one create each): its plan file and `show -json` are a real plan's, so
plangate's parser, gate, renderer and comment splitting do their real work. Everything else is real:
`plangate web`, W `plangate worker` processes, a fresh private Redis, the stand-in GitHub, git, and
plangate's runner with its sandbox (bubblewrap: one start per project, its init, plan and show in it;
the run prints what one step in a sandbox of its own costs against the same step unsandboxed, measured
just before). Printed, from one run:

* wall time from the `pull_request` delivery to the final `plangate/plan` and `plangate/destroy`,
  against the ideal: the stand-in's step time × 3 steps × N ÷ W (goal ≤ 1.10× at 2,000 / 20);
* the GitHub requests the workers made, by endpoint, the plan comment's parts and the requests for them;
* Redis's peak memory (`used_memory_peak`) and the keys left after, by kind;
* the RSS of the W worker parents before and after, and the largest sampled (work horses included);
* the time from the last plan job's end to the publish job's start (RQ's fan-in) and its own time;
* the CPU seconds of plangate's processes (web, workers, their horses and everything those ran:
  git, bubblewrap, the stand-in's `sh`) per project, with Redis's and the stand-in GitHub's own.

The step time decides what the ratio says. plangate's own time per project (a job's share of RQ's
fork, git, its sandbox's start, parsing and rendering) and its dispatch (the PR's changed files,
listed 100 a page, are most of it at 2,000) are fixed, so the ratio falls as the steps grow; and below
the step time at which W workers' CPU fills both cores (on this 2-core machine, 20 workers at 0.05 s
per step) the run is CPU-bound and measures the machine, not the orchestration. The run prints that
share (CPU used ÷ 2 × wall): 1 s per step, the default, keeps it near a sixth at 2,000 / 20; real
terraform steps take longer. The sandbox adds wall time rather than CPU (bubblewrap's namespaces):
the line "one stand-in step through plangate's runner" says how much one start costs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import redis
from rq import Queue
from rq.job import Job

from benchmarks.bench_monorepo import GITHUB_MAX_BODY, _mib, _rss_kib, _RssSampler, _shape
from benchmarks.bench_plan_overhead import _delivered, _settled
from core.contract import PLANS_QUEUE, Jobs
from core.sandbox_paths import SandboxPaths
from standin.local_redis import private_redis
from standin.sample import main_tf
from standin.stack import Stack, running_stack
from tests.e2e import PLAN_JOBS, finished_jobs, planned_dirs
from workers.adapters.github.pacing import BURST, RATE
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.sandbox import Sandbox, prepare
from workers.adapters.terraform.steps import Terraform

GOAL = 1.10
STEPS = 3  # init, plan, show -json (plan's own output is the comment's text: no `show` runs)
FAKE = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "terraform_steps.sh"
PROGRESS = "## plangate is planning"  # core/render/progress.py: the comment while projects plan
POLL = 0.05  # seconds between looks at the statuses: 1/1000 of the ideal at 2,000 / 20 and 1 s steps
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of `pid` and of every child it has waited for (RQ's horses, git, bwrap, ...)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK  # utime, stime, cutime, cstime


def _web_pid(stack: Stack) -> int:
    """`plangate web`: the stack's one child process that is not a worker."""
    me = os.getpid()
    workers = {w.pid for w in stack.workers}
    children = [int(c) for t in Path(f"/proc/{me}/task").iterdir() for c in (t / "children").read_text().split()]
    (web,) = [c for c in children if c not in workers and b"web" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return web


def _fake_bin(root: Path) -> Path:
    tool = root / "bin" / "terraform"
    tool.parent.mkdir(parents=True)
    shutil.copy(FAKE, tool)
    tool.chmod(0o755)
    return tool.parent


@dataclass(frozen=True)
class StepCost:
    """One stand-in step run through plangate's runner: wall and CPU seconds (of every process it ran)."""

    wall: float
    cpu: float


def _step_cost(sandbox: Sandbox, root: Path, bindir: Path, rounds: int = 30) -> StepCost:
    """A zero-second stand-in `init` through plangate's runner, `rounds` times one after another."""
    work = Path(tempfile.mkdtemp(dir=root))
    env = build_env(passthrough=[], source_env=os.environ, home=root, plugin_cache=root / "cache")
    env.update(PATH=f"{bindir}:/usr/bin:/bin", FAKE_TF_STEP_SECONDS="0")
    tf = Terraform("terraform", env, timeout=60, memory_limit_bytes=None, sandbox=sandbox, writable=(work,))
    before, started = _used(), time.perf_counter()
    for _ in range(rounds):
        assert tf.init(work).ok
    wall = time.perf_counter() - started
    cpu = _used() - before
    shutil.rmtree(work)
    return StepCost(wall / rounds, cpu / rounds)


def _used() -> float:
    """CPU seconds of this process and of every child it has waited for."""
    mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime


def _epoch(when: dt.datetime | None) -> float:
    assert when is not None
    return when.replace(tzinfo=dt.UTC).timestamp() if when.tzinfo is None else when.timestamp()


@dataclass(frozen=True)
class Timeline:
    """When (epoch seconds) the PR's jobs ran: the dispatch, the plan jobs, the publish."""

    dispatch: tuple[float, float]
    plans: list[tuple[float, float, int]]  # started, ended, projects planned
    publish: tuple[float, float]

    @property
    def last_plan(self) -> float:
        return max(end for _, end, _ in self.plans)

    @property
    def busy(self) -> float:
        """Seconds the plan jobs ran, all added up."""
        return sum(end - start for start, end, _ in self.plans)


def _timeline(stack: Stack, conn: redis.Redis, sha: str) -> Timeline:
    """Once the publish job has ended: it goes on after the statuses, posting the comment's other parts."""
    published = (Jobs.PUBLISH_PLAN,)
    (publish,) = stack.wait_for("the publish", lambda: finished_jobs(conn, sha, published), timeout=3600, every=POLL)
    jobs = finished_jobs(conn, sha, PLAN_JOBS)
    (dispatch,) = [j for j in jobs if j.func_name == Jobs.PLAN_PR]
    plans = [(_epoch(j.started_at), _epoch(j.ended_at), len(planned_dirs(j))) for j in jobs if j is not dispatch]
    return Timeline(
        (_epoch(dispatch.started_at), _epoch(dispatch.ended_at)),
        plans,
        (_epoch(publish.started_at), _epoch(publish.ended_at)),
    )


def _redis_report(conn: redis.Redis) -> tuple[int, Counter[str], Counter[str]]:
    """Peak memory (bytes), and the keys left by kind (their first two `:` parts): all, and those
    that never expire."""
    peak = int(conn.info("memory")["used_memory_peak"])
    kinds: Counter[str] = Counter()
    lasting: Counter[str] = Counter()
    for key in conn.scan_iter(count=1000):
        name = key.decode(errors="replace")
        kind = ":".join(part if not part[:1].isdigit() else "{n}" for part in name.split(":")[:2])
        kinds[kind] += 1
        lasting[kind] += conn.ttl(key) == -1
    return peak, kinds, lasting


def main() -> int:
    opts = argparse.ArgumentParser()
    opts.add_argument("--projects", type=int, default=2000)
    opts.add_argument("--workers", type=int, default=20)
    opts.add_argument("--step-seconds", type=float, default=1.0)
    opts.add_argument("--real", action="store_true", help="run bench_monorepo (real terraform) instead")
    args = opts.parse_args()
    if args.real:
        monorepo = [sys.executable, "-m", "benchmarks.bench_monorepo", "--projects", "200", "--workers", "2"]
        return subprocess.run(monorepo, check=False).returncode
    return _run(args.projects, args.workers, args.step_seconds)


def _run(projects: int, workers: int, step: float) -> int:
    names = [f"p{i:04d}" for i in range(projects)]
    ideal = STEPS * step * projects / workers
    with tempfile.TemporaryDirectory() as tmp, private_redis() as redis_url:
        root = Path(tmp)
        bindir = _fake_bin(root)
        sandbox = prepare("bwrap", SandboxPaths(), root / "probe")
        boxed, bare = _step_cost(sandbox, root, bindir), _step_cost(Sandbox(), root, bindir)
        state = root / "state" / "terraform.tfstate"
        before = {f"{n}/main.tf": main_tf(state, {"old": "x"}) for n in names}
        after = {f"{n}/main.tf": main_tf(state, {"new": "x"}) for n in names}
        fake_env = {
            "PATH": f"{bindir}:{os.environ['PATH']}",
            "PLANGATE_TF_ENV": "FAKE_TF_STEP_SECONDS",
            "FAKE_TF_STEP_SECONDS": str(step),
            "PLANGATE_MAX_PROJECTS": str(max(projects, 500)),  # 500 by default: a site this big raises it
        }
        conn = redis.Redis.from_url(redis_url)
        with running_stack(root, redis_url, workers=workers, extra_env=fake_env) as stack:
            gh = stack.gh
            repo = gh.create_repo("acme", "monorepo", before)
            pids = [w.pid for w in stack.workers]
            web = _web_pid(stack)
            rss_before = [_rss_kib(p) for p in pids]
            cpu_before = sum(_cpu_seconds(p) for p in [web, *pids])
            redis_cpu_before = _redis_cpu(conn)
            time.sleep(BURST / RATE)  # GitHub writes are paced per installation: start unpaced
            first = len(gh.state.requests)
            me_before = time.process_time()
            with _RssSampler(pids) as sampler:
                pr = gh.open_pr(repo, "everything", "alice", "Touch every project", after)
                stack.wait_for("the plan", lambda: _settled(stack, repo, pr.head_sha), timeout=36000, every=POLL)
                final = time.perf_counter()
                wall = final - _delivered(gh, pr.number)
                final_epoch = time.time() - (time.perf_counter() - final)
            rss_after = [_rss_kib(p) for p in pids]
            delivered_epoch = time.time() - (time.perf_counter() - _delivered(gh, pr.number))
            timeline = _timeline(stack, conn, pr.head_sha)
            time.sleep(1)  # the stand-in logs a request once its answer is sent
            me = time.process_time() - me_before
            cpu = sum(_cpu_seconds(p) for p in [web, *pids]) - cpu_before
            redis_cpu = _redis_cpu(conn) - redis_cpu_before
            requests = [r for r in gh.state.requests[first:] if r.auth != "basic"]
            bot = [c for c in gh.comments_on(repo, pr.number) if c.user.login == "plangate[bot]"]
            comments = [c.body for c in bot]
            written = [body for c in bot for body in [*(e.body for e in c.edits), c.body]]
            progress = sum(1 for body in written if PROGRESS in body)
            statuses = gh.reports(repo, pr.head_sha)
            jobs = Counter(
                str(j.func_name).rsplit(".", 1)[-1]
                for j in Job.fetch_many(Queue(PLANS_QUEUE, connection=conn).finished_job_registry.get_job_ids(), conn)
                if j is not None
            )
        peak, kinds, lasting = _redis_report(conn)
    kinds_by_endpoint = Counter(f"{r.method} {_shape(r.path)}" for r in requests)
    comment_calls = sum(n for kind, n in kinds_by_endpoint.items() if "/comments" in kind)
    print(
        f"{projects} projects, {workers} workers, stand-in terraform sleeping {step:g} s per step "
        f"({STEPS} steps per project), sandboxed (bubblewrap)"
    )
    print(
        f"one stand-in step through plangate's runner: {boxed.wall * 1000:.1f} ms wall, {boxed.cpu * 1000:.1f} ms CPU "
        f"sandboxed; {bare.wall * 1000:.1f} ms, {bare.cpu * 1000:.1f} ms without the sandbox"
    )
    print(f"ideal (step time × {STEPS} × projects ÷ workers): {ideal:.1f} s")
    print(f"delivery → final statuses: {wall:.1f} s = {wall / ideal:.3f}× ideal (goal ≤ {GOAL}×)")
    print("  final " + ", ".join(f"{k} {v.state} ({v.description})" for k, v in sorted(statuses.items())))
    _print_timeline(timeline, delivered_epoch, final_epoch, workers, projects, step)
    print("jobs: " + ", ".join(f"{n} {name}" for name, n in sorted(jobs.items())))
    print(f"GitHub requests: {len(requests)}, of which {comment_calls} for the {len(comments)} comment part(s)")
    for kind, n in sorted(kinds_by_endpoint.items()):
        print(f"  {n:5d}  {kind}")
    missing = [n for n in names if not any(f"`{n}`" in body or f" {n} " in body for body in comments)]
    too_long = [len(body) for body in comments if len(body) > GITHUB_MAX_BODY]
    print(
        f"  the plan comment's texts written: {len(written)}, {progress} of them progress "
        "(at most one per 10 s: they grow with the wall time, not with N)"
    )
    print(
        f"comment: {len(comments)} part(s), longest {max(map(len, comments), default=0):,} chars; "
        f"projects not named: {len(missing)}; parts over GitHub's limit: {len(too_long)}"
    )
    print(
        f"Redis: peak {peak / 2**20:.1f} MiB; {sum(kinds.values())} keys left, {sum(lasting.values())} without a TTL "
        "(by kind: left, of which without a TTL):"
    )
    for kind, n in kinds.most_common():
        print(f"  {n:5d} {lasting[kind]:5d}  {kind}")
    print(
        f"worker RSS (MiB) before {_mib(rss_before)}; after {_mib(rss_after)}; "
        f"peak sampled {sampler.peak / 1024:.0f} (horses included)"
    )
    capacity = 2 * wall
    print(
        f"CPU: plangate (web, workers, horses and what they ran) {cpu:.1f} s = {cpu / projects * 1000:.0f} ms per "
        f"project; Redis {redis_cpu:.1f} s; the stand-in GitHub and this script {me:.1f} s; "
        f"together {(cpu + redis_cpu + me) / capacity:.0%} of 2 cores × wall"
    )
    return 0 if not missing and not too_long and statuses["plangate/destroy"].state == "failure" else 1


def _print_timeline(t: Timeline, delivered: float, final: float, workers: int, projects: int, step: float) -> None:
    first = min(start for start, _, _ in t.plans)
    span = t.last_plan - first
    planned = sum(n for _, _, n in t.plans)
    print(
        f"delivery → dispatch started {t.dispatch[0] - delivered:.2f} s, "
        f"dispatch ran {t.dispatch[1] - t.dispatch[0]:.2f} s; "
        f"first plan job started {first - delivered:.2f} s after the delivery"
    )
    print(
        f"plan jobs: {len(t.plans)} planning {planned} projects, from the first start to the last end {span:.1f} s; "
        f"busy {t.busy:.1f} s of {workers} × {span:.1f} s = {t.busy / (workers * span):.0%}; "
        f"{t.busy / max(planned, 1):.3f} s per project in a job (the stand-in sleeps {STEPS * step:g} s)"
    )
    print(
        f"last plan job ended → publish started {t.publish[0] - t.last_plan:.2f} s (the fan-in), "
        f"publish ran {t.publish[1] - t.publish[0]:.2f} s (the comment's every part); final statuses "
        f"{final - t.last_plan:.2f} s after the last plan job"
    )


def _redis_cpu(conn: redis.Redis) -> float:
    info = conn.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


if __name__ == "__main__":
    raise SystemExit(main())
