"""Shared steps of the end-to-end stories: a repository as main was last applied, and waits on GitHub state."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Collection
from pathlib import Path

import redis
from rq import Queue
from rq.job import Job

from core.contract import PLANS_QUEUE, Jobs
from core.render.marker import parse_marker
from core.results import BatchResult, ProjectResult
from standin.stack import Stack
from standin.state import Comment, Repo
from tests.tfproject import apply_directly, main_tf

BOT = "plangate[bot]"
BASE = {"keep": "a", "doomed": "b"}


def applied_state(tmp_path: Path, resources: dict[str, str] = BASE) -> Path:
    """The local state file (outside every checkout) after main's last apply of `resources`."""
    state = tmp_path / "state" / "terraform.tfstate"
    apply_directly(tmp_path / "applied", main_tf(state, resources))
    return state


def infra_repo(stack: Stack, state: Path, resources: dict[str, str] = BASE, also: dict[str, str] | None = None) -> Repo:
    """acme/infra as main was last applied (with the files `also`), with @alice and @bob as writers."""
    repo = stack.gh.create_repo("acme", "infra", {"infra/main.tf": main_tf(state, resources), **(also or {})})
    stack.gh.set_permission(repo, "alice", "write")
    stack.gh.set_permission(repo, "bob", "write")
    return repo


def status(stack: Stack, repo: Repo, sha: str, context: str, state: str, contains: str = "") -> str:
    """Wait until `context` on `sha` is `state` (its description containing `contains`); the description."""

    def probe() -> str | None:
        found = stack.gh.reports(repo, sha).get(context)
        if found and found.state == state and contains in (found.description or ""):
            return found.description or state
        return None

    return stack.wait_for(f"{context} {state} on {sha[:7]}", probe, timeout=180)


def planned(stack: Stack, repo: Repo, sha: str) -> dict[str, str]:
    """Wait until `sha` has been planned (plangate/destroy reported, plangate/plan no longer pending)
    and, on a PR, until its plan comment shows `sha`; the state of every report on it by name."""

    def probe() -> dict[str, str] | None:
        states = {name: report.state for name, report in stack.gh.reports(repo, sha).items()}
        return states if states.get("plangate/destroy") and states.get("plangate/plan") != "pending" else None

    states = stack.wait_for(f"the plan of {sha[:7]}", probe)
    plan_comment_shows(stack, repo, sha)
    return states


def plan_comment_shows(stack: Stack, repo: Repo, sha: str) -> None:
    """On a PR whose head `sha` was planned, wait until its plan comment shows `sha`: the publish writes
    the comment and the reports at once, so the reports can be final a moment before the comment.
    (A PR with no project to plan, a refused fork and an invalid config get no plan of the SHA.)"""
    plan = stack.gh.reports(repo, sha).get("plangate/plan")
    why = plan.description or "" if plan is not None else ""
    if any(word in why for word in ("no Terraform project", "fork", ".plangate.yml")):
        return
    with stack.gh.state.lock:
        heads = [pr.number for pr in stack.gh.state.pulls.values() if pr.repo_id == repo.id and pr.head_sha == sha]
    if not heads:
        return  # a push or a merge group: no PR comment

    def shown() -> bool:
        return any(
            sha in body and "plangate:plan " in body and not progress(body)
            for body in bot_bodies(stack, repo, heads[0])
        )

    stack.wait_for(f"the plan comment of {sha[:7]}", shown)


def progress(body: str) -> bool:
    """Does `body` show a multi-project plan's progress (workers.flows.plan_progress), not its plan?"""
    parsed = parse_marker(body)
    return parsed is not None and parsed[0] == "plan" and parsed[1].get("progress") is True


def bot_bodies(stack: Stack, repo: Repo, number: int) -> list[str]:
    """Every comment plangate wrote on #`number`, oldest first."""
    return [c.body for c in stack.gh.comments_on(repo, number) if c.user.login == BOT]


def replies(stack: Stack, repo: Repo, number: int) -> list[str]:
    """plangate's comments on #`number` but its plan comment (and that comment's parts): its replies."""
    return [b for b in bot_bodies(stack, repo, number) if "plangate:plan" not in b]


def answered(stack: Stack, repo: Repo, number: int, count: int, what: str = "") -> list[str]:
    """Wait until plangate has replied `count` times on #`number`; its replies there."""

    def probe() -> list[str] | None:
        found = replies(stack, repo, number)
        return found if len(found) >= count else None

    return stack.wait_for(what or f"{count} replies on #{number}", probe)


def comment_and_wait(stack: Stack, repo: Repo, number: int, login: str, body: str) -> str:
    """Comment as `login` and return plangate's reply (the bot comment that answers it)."""
    return _comment_and_reply(stack, repo, number, login, body)[1]


def comment_and_wait_closed(stack: Stack, repo: Repo, number: int, login: str, body: str) -> tuple[str, list[str]]:
    """Comment as `login`; plangate's reply and, once plangate has closed the comment, its reactions
    to it (eyes on receipt, then the verdict)."""
    comment, reply = _comment_and_reply(stack, repo, number, login, body)

    def closed() -> list[str] | None:
        reactions = stack.gh.reactions_on(comment)
        return reactions if len(reactions) >= 2 else None

    return reply, stack.wait_for("the closing reaction", closed)


def _comment_and_reply(stack: Stack, repo: Repo, number: int, login: str, body: str) -> tuple[Comment, str]:
    before = len(replies(stack, repo, number))
    if body.startswith("/approve-destroy"):
        next_second()
    comment = stack.gh.comment(repo, number, login, body)
    return comment, answered(stack, repo, number, before + 1, f"the reply to {login}'s {body!r}")[before]


# A PR's only plan publishes itself: in its dispatch (`plan_pr`) when the project's slot is free, else
# in a `plan_and_publish` job of its own. Several projects go in batches (`plan_projects`), a lone
# one in a `plan_project` job.
PLAN_JOBS = (
    Jobs.PLAN_PROJECT,
    Jobs.PLAN_PROJECTS,
    Jobs.PLAN_AND_PUBLISH,
    Jobs.PLAN_PR,
)


def plan_jobs(conn: redis.Redis, sha: str) -> list[Job]:
    """The jobs that planned a project at `sha` (RQ keeps finished jobs for a day); a dispatch counts
    when it planned one in place."""
    found = finished_jobs(conn, sha, PLAN_JOBS)
    return [j for j in found if j.func_name != Jobs.PLAN_PR or isinstance(j.return_value(), ProjectResult)]


def plans_ended(stack: Stack, conn: redis.Redis, sha: str, count: int) -> list[Job]:
    """The plan jobs at `sha`, once `count` of them have ended: a job that publishes ends just after its
    statuses and comment show, and RQ records it then."""

    def probe() -> list[Job] | None:
        found = plan_jobs(conn, sha)
        return found if len(found) >= count else None

    return stack.wait_for(f"{count} plan job(s) of {sha[:7]} to end", probe)


def planned_dirs(job: Job) -> list[str]:
    """The directories of the projects a plan job planned itself (a dispatch's is in its result; a
    batch's are those it did not hand on to a job of their own)."""
    project = job.kwargs.get("project")
    if project is not None:
        return [str(project.dir)]
    result = job.return_value()
    if isinstance(result, BatchResult):
        return [r.dir for r in result.results.values()]
    assert isinstance(result, ProjectResult)
    return [result.dir]


def finished_jobs(conn: redis.Redis, sha: str, funcs: tuple[str, ...]) -> list[Job]:
    """The finished jobs of the plans queue running one of `funcs` for `sha`."""
    ids = Queue(PLANS_QUEUE, connection=conn).finished_job_registry.get_job_ids()
    jobs = [j for j in Job.fetch_many(ids, connection=conn) if j is not None]
    return [j for j in jobs if j.func_name in funcs and j.kwargs["request"].sha == sha]


def next_second() -> None:
    """Wait for GitHub's clock (whole seconds) to tick: an approval must be written after the plan it
    approves went out, and a comment in the same second as the plan counts as written before it."""
    time.sleep(1.01 - time.time() % 1)


def kill_the_horse_running(marker: str) -> None:
    """SIGKILL the RQ work horse whose sandbox (bwrap) runs a command naming `marker`: a worker lost
    mid-job. (From inside the sandbox the command could not reach the horse itself.)"""
    horse = horse_running(marker)
    if horse is None:
        raise AssertionError(f"no sandbox running {marker}")
    os.kill(horse, signal.SIGKILL)


def horse_running(marker: str, besides: Collection[int] = ()) -> int | None:
    """The pid of the work horse whose sandbox runs a command naming `marker` (none of `besides`). A
    horse is a worker forked by a worker: a sandbox outliving a killed horse has another parent."""
    for proc in Path("/proc").iterdir():
        argv = _cmdline(proc)
        if argv and argv[0].endswith(b"bwrap") and any(marker.encode() in a for a in argv):
            horse = _parent(proc)
            if horse is not None and horse not in besides and _is_worker(horse) and _is_worker(_parent(horse)):
                return horse
    return None


def _cmdline(proc: Path) -> list[bytes]:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _parent(proc: Path | int | None) -> int | None:
    if proc is None:
        return None
    try:
        return int((Path("/proc") / str(proc) / "stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _is_worker(pid: int | None) -> bool:
    """A plangate worker or one of its work horses (RQ titles both `rq:worker:NAME: …`)."""
    argv = _cmdline(Path("/proc") / str(pid)) if pid else []
    return (b"plangate" in argv and b"worker" in argv) or bool(argv and argv[0].startswith(b"rq:worker:"))


def horse_of(job: str, besides: Collection[int] = ()) -> int | None:
    """The pid of a work horse running the job function `job` (RQ titles it `Processing JOB from …`)."""
    wanted = f"Processing {job} from ".encode()
    for proc in Path("/proc").iterdir():
        pid = int(proc.name) if proc.name.isdigit() else None
        if pid is None or pid in besides or wanted not in b" ".join(_cmdline(proc)):
            continue
        if _descends_from(pid, os.getpid()):  # this test's workers, never another run's on the same machine
            return pid
    return None


def _descends_from(pid: int | None, ancestor: int) -> bool:
    while pid is not None and pid > 1:
        if pid == ancestor:
            return True
        pid = _parent(pid)
    return False
