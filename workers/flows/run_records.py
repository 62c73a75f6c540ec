"""A run page's record, opened and closed by the flows that run terraform (core.runs, plumbing.run_store).

A run is one project's pipeline in one RQ job: its id is `run_id(job id, project identity)`, so the
job's other records (a PR's publish, `record_run`) can name it, and a job RQ runs again (its worker
died) starts the same run again, its output empty. Its output streams while terraform runs
(workers.adapters.live_output); its end says how it went, with the plan drawn as a diff.

Everything here is masked as the comments are (the default branch's mask patterns, the server's, and
the backstop of plangate's own secrets). Where the patterns are unknown nothing of the output or the
plan is kept, only where and when the run ran. The page is a view: a Redis error here is logged and
never stops the flow (the gate, its statuses and comments come first).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from core import redis_keys
from core.contract import PlanRequest
from core.gate import Block
from core.plan import summary_line
from core.projects import Project
from core.render.mask import MASK, Masker
from core.results import ProjectResult
from core.run_plan import run_plan
from core.runs import RunHead, run_id
from plumbing.run_store import RunStore
from workers.adapters.live_output import LiveOutput
from workers.adapters.queue.running import current_job_id
from workers.adapters.terraform.pipeline import SavedPlan
from workers.adapters.terraform.steps import Terraform
from workers.context import WorkerContext

log = logging.getLogger("plangate.runs")
SUMMARY_CAP = 300  # characters of a failure's first line kept as a run's summary
T = TypeVar("T")
RESTARTED = "… this run started again: the worker running it before stopped before it ended"


@dataclass(frozen=True)
class Where:
    """What a run is about: its kind (core.runs.KINDS), the job that runs it, the commit and conversation."""

    kind: str
    job_id: str
    repo: str
    repo_id: int
    sha: str
    number: int | None = None
    code_sha: str | None = None


def of_plan(req: PlanRequest, project: Project) -> Where | None:
    """The run a plan job makes of `project`: a PR's plan, or a merge group's (PR 0)."""
    job = current_job_id()
    if job is None:
        return None
    kind, number = ("merge-group", None) if req.pr == 0 else ("plan", req.pr)
    code = project.destroy_from or req.code_sha or None
    return Where(kind, job, req.repo, req.repo_id, req.sha, number, code)


def plan_masks(ctx: WorkerContext, req: PlanRequest) -> list[str] | None:
    """The mask patterns a PR's (or a merge group's) dispatch read from the default branch, with the
    server's; None when its record is gone: the run then keeps none of the output."""
    found = ctx.records.get_json(redis_keys.plan_meta(req.repo_id, req.pr, req.sha))
    if not isinstance(found, dict) or "mask_patterns" not in found:
        return None
    return [*ctx.settings.mask_patterns, *found["mask_patterns"]]


@dataclass
class Run:
    """One open run: `streamed` gives its terraform runner the run's output sink, `finish` ends it."""

    head: RunHead
    job_id: str
    patterns: tuple[str, ...] | None  # None: unknown, so nothing of the output or the plan is kept
    ctx: WorkerContext
    sink: LiveOutput | None = None
    ended: bool = False

    @property
    def id(self) -> str:
        return self.head.id

    def streamed(self, tf: Terraform) -> Terraform:
        return replace(tf, live=self.sink)

    def learn_secrets(self, secrets: Collection[str]) -> None:
        """Values the plan marked sensitive: masked in what the run prints from now on (its apply)."""
        if self.sink is not None:
            self.sink.add_secrets(secrets)

    def finish(
        self,
        outcome: str,
        ok: bool,
        summary: str = "",
        result: ProjectResult | None = None,
        gated: Collection[str] = (),
        source: bytes | None = None,
    ) -> None:
        """How the run ended, its `summary` masked like a comment, and the plan of `result` drawn (if any),
        attribute by attribute from `source`, the `show -json` it was parsed from (pipeline.SavedPlan.source)."""
        if self.ended:
            return
        self.ended = True
        if self.sink is not None:
            self.sink.close()
        _quietly(self.head, "finish", lambda: self._finish(outcome, ok, summary, result, gated, source))

    def _finish(
        self,
        outcome: str,
        ok: bool,
        summary: str,
        result: ProjectResult | None,
        gated: Collection[str],
        source: bytes | None,
    ) -> None:
        mask = self._masker(result.secrets if result is not None else ())
        text = "" if mask is None else _first_line(mask(summary))  # masked whole, then cut
        plan = None
        if result is not None and self.patterns is not None:  # the head is written regardless
            drawn, masks = result, self.patterns
            backstop = self.ctx.tokens.backstop()
            plan = _quietly(self.head, "plan", lambda: run_plan(drawn, masks, gated, source=source, backstop=backstop))
        head = replace(self.head, ended=time.time(), outcome=outcome, ok=ok, summary=text)
        self.ctx.run_store.finish(head, plan)

    def _masker(self, secrets: Sequence[str] = ()) -> Callable[[str], str] | None:
        if self.patterns is None:
            return None
        masker, backstop = Masker(secrets, self.patterns), self.ctx.tokens.backstop()
        return lambda text: backstop(masker(text))


@contextlib.contextmanager
def recorded(
    ctx: WorkerContext,
    where: Where | None,
    project: Project,
    tool: str,
    patterns: Sequence[str] | None,
    failed: str = "failed",
) -> Iterator[Run | None]:
    """A run of `project` opened for the block (None without a job to name it), ended as `failed` when
    the block raises (a job that RQ runs again starts it again), "stopped" when it forgets to end it."""
    if where is None:
        yield None
        return
    run = open_run(ctx, where, project, tool, patterns)
    try:
        yield run
    except BaseException as exc:
        run.finish(failed, False, f"{type(exc).__name__}: {exc}")
        raise
    finally:
        run.finish("stopped", False, "the job ended without saying how this run went")


def open_run(ctx: WorkerContext, where: Where, project: Project, tool: str, patterns: Sequence[str] | None) -> Run:
    """A run started (again, if its job runs again: its output then starts empty, with a line saying so)."""
    head = RunHead(
        id=run_id(where.job_id, project.identity),
        kind=where.kind,
        repo=where.repo,
        repo_id=where.repo_id,
        sha=where.sha,
        project=project.name,
        dir=project.dir,
        workspace=project.workspace,
        number=where.number,
        code_sha=where.code_sha if where.code_sha and where.code_sha != where.sha else None,
        tool=tool.rsplit("/", 1)[-1],
        started=time.time(),
    )
    run = Run(head, where.job_id, None if patterns is None else tuple(patterns), ctx)
    store = ctx.run_store
    before = _quietly(head, "read", lambda: store.head(head.id))
    if not _quietly(head, "start", lambda: _started(store, head)):
        return run
    run.sink = _quietly(head, "stream", lambda: _sink(run, store, restarted=before is not None and before.running))
    return run


def _sink(run: Run, store: RunStore, *, restarted: bool) -> LiveOutput | None:
    """The run's output sink, unless its mask patterns are unknown."""
    if run._masker() is None:
        return None
    sink = LiveOutput(store, run.head, lambda: run._masker() or _withheld)
    if restarted:
        sink.step(RESTARTED)
    return sink


def plan_outcome(result: ProjectResult) -> tuple[str, bool, str]:
    """A plan's outcome, whether it is green, and its summary: "planned", "no changes" or "plan failed"."""
    if result.plan is None:
        return "plan failed", False, result.error or "the plan failed"
    summary = summary_line(result.plan).removeprefix("Plan: ").removesuffix(".")
    return ("planned" if result.plan.has_changes else "no changes"), not result.plan.errored, summary


def held(block: Block, saved: SavedPlan) -> tuple[str, bool, str]:
    """A held apply's run: "plan failed" (its error), else "blocked" (why, or what waits for approval)."""
    if saved.plan is None:
        return "plan failed", False, saved.error or "the plan failed"
    why = "; ".join(block.reasons) if block.error else f"{len(block.unapproved)} waiting for /approve-destroy"
    return "blocked", False, why


def noted(ctx: WorkerContext, where: Where, project: Project, outcome: str, ok: bool, summary: str) -> str:
    """A run that runs no terraform (an apply held back by a dependency), opened and ended at once; its id."""
    run = open_run(ctx, where, project, project.tool or "terraform", ctx.settings.mask_patterns)
    run.finish(outcome, ok, summary)
    return run.id


def died(ctx: WorkerContext, job_id: str, project: Project, why: str) -> None:
    """The run of `project` in job `job_id`, if it never ended, ended as "died": its worker died while it
    ran, and the job run again does not run terraform again (an apply is never run twice)."""
    _died(ctx, run_id(job_id, project.identity), why)


def plans_ended(ctx: WorkerContext, made: Iterable[tuple[str, ProjectResult]]) -> None:
    """At a publish, every plan job has ended: a run of theirs still running died with its worker."""
    for job_id, result in made:
        _died(ctx, run_id(job_id, result.identity), "the plan job ended before this run did: its worker died")


def _died(ctx: WorkerContext, page: str, why: str) -> None:
    store = ctx.run_store
    head = _quietly_id(page, "read", lambda: store.head(page))
    if head is not None and head.running:
        ended = replace(head, ended=time.time(), outcome="died", ok=False, summary=why)
        _quietly(head, "finish", lambda: store.finish(ended, None))


def page_of(ctx: WorkerContext, job_id: str, project: Project) -> str | None:
    """The id of the run of `project` in job `job_id`, when that run has a page (it may never have opened)."""
    page = run_id(job_id, project.identity)
    return page if _quietly_id(page, "read", lambda: ctx.run_store.head(page)) is not None else None


def failure_summary(output: str) -> str:
    """What a failed step's run says of it: terraform's first error, else its first line."""
    return next((line for line in output.splitlines() if "Error:" in line), output)


def _withheld(text: str) -> str:
    """The mask of a run whose patterns are unknown (never used: such a run has no sink)."""
    return MASK


def _started(store: RunStore, head: RunHead) -> bool:
    store.start(head)
    return True


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= SUMMARY_CAP else line[: SUMMARY_CAP - 1] + "…"


def _quietly(head: RunHead, what: str, work: Callable[[], T]) -> T | None:
    return _quietly_id(head.id, what, work)


def _quietly_id(page: str, what: str, work: Callable[[], T]) -> T | None:
    """`work`, a failure logged (once per call) and answered None: a run page never fails a flow (a
    Redis error, or a bug in drawing the page, costs the page, never the plan or the apply)."""
    try:
        return work()
    except Exception as exc:
        log.warning(json.dumps({"run": page, "run_page": what, "error": type(exc).__name__}))
        return None
