"""How RQ runs each kind of job: its timeout, how long its result is kept, whether it is run again when
its worker dies, what is called when it fails for good, and whether it waits for its project's slot.
Every enqueue of plangate's jobs takes its options from `OPTIONS`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from rq import Callback, RateLimit, Retry

from core import redis_keys
from core.contract import JOB_FAILED, PLAN_RETRIES, RERUN_INTERVALS, Jobs
from core.projects import Project

STEP_MARGIN = 120  # RQ's own timeout must only fire after the runner's SIGINT → SIGTERM → SIGKILL
PUBLISH_TIMEOUT = 600  # rendering and writing one plan comment and its statuses, rate-limit waits included
JOIN_TIMEOUT = 60  # seconds; a join does nothing but end
DAY = 24 * 3600
RERUN = Retry(max=PLAN_RETRIES, interval=list(RERUN_INTERVALS))  # jobs without a side effect
FAILED = Callback(JOB_FAILED)  # counts abandoned jobs; a job that owes a report gets its last word
# A last word waits out GitHub like any job (workers.rescheduling); these cover a killed horse.
SAY_AGAIN = Retry(max=3, interval=[10, 60, 300])
GAVE_UP = "plangate_gave_up"  # job.meta: why the job stopped coming back (workers.rescheduling)


@dataclass(frozen=True)
class Options:
    """One kind of job's options. Its timeout: `seconds`, plus `tf_steps` terraform steps
    (PLANGATE_TF_TIMEOUT each) and STEP_MARGIN for each project it runs them for."""

    seconds: int = 0
    tf_steps: int = 0
    result_ttl: int | None = None  # None: RQ's default
    failure_ttl: int | None = None  # None: RQ's default
    retry: Retry | None = RERUN
    on_failure: Callback | None = FAILED
    per_project: bool = False  # one at a time per project, across all workers (`project_rate_limit`)

    def seconds_needed(self, tf_timeout: float = 0, projects: int = 1) -> float:
        steps = (self.tf_steps * tf_timeout + STEP_MARGIN) * projects if self.tf_steps else 0
        return steps + self.seconds

    def timeout(self, tf_timeout: float = 0, projects: int = 1) -> int:
        return int(self.seconds_needed(tf_timeout, projects))

    def enqueue_args(
        self, *, tf_timeout: float = 0, projects: int = 1, rate_limit: RateLimit | None = None
    ) -> dict[str, Any]:
        """`Queue.enqueue`'s keyword arguments for a job of this kind (`rate_limit`: its project's)."""
        assert (rate_limit is not None) == self.per_project, "a per-project job needs its project's limit"
        found: dict[str, Any] = {"job_timeout": self.timeout(tf_timeout, projects)}
        if rate_limit is not None:
            found["rate_limit"] = rate_limit
        if self.result_ttl is not None:
            found["result_ttl"] = self.result_ttl
        if self.failure_ttl is not None:
            found["failure_ttl"] = self.failure_ttl
        if self.retry is not None:
            found["retry"] = self.retry
        if self.on_failure is not None:
            found["on_failure"] = self.on_failure
        return found


_ONCE = 3 * 3600  # a job enqueued once per id (plumbing.enqueue): dispatches, commands
_PLAN = Options(tf_steps=4, result_ttl=redis_keys.PLAN_RESULT_TTL)  # kept: the next push may carry it
OPTIONS: dict[str, Options] = {
    # Enqueued once per id: a dispatch is re-run when its worker dies; one that owes a report has a last word.
    Jobs.PLAN_PR: Options(_ONCE, result_ttl=3600),
    Jobs.PLAN_MERGE_GROUP: Options(_ONCE, result_ttl=3600),
    Jobs.APPLY_PUSH: Options(_ONCE, result_ttl=3600, retry=None),
    Jobs.HANDLE_COMMAND: Options(_ONCE, result_ttl=3600, retry=None),
    Jobs.RESTORE_COMMENT: Options(_ONCE, result_ttl=3600, retry=None, on_failure=None),
    Jobs.REVIEW_DISMISSED: Options(_ONCE, result_ttl=3600, retry=None, on_failure=None),
    Jobs.REFRESH_DRIFT_TARGETS: Options(_ONCE, result_ttl=0, retry=None, on_failure=None),
    Jobs.RECOVER_LOST_WORK: Options(3600, retry=None, on_failure=None),  # by a worker that found Redis wiped
    # A close tidied up: dropping records and cancelling a queued plan is safe to run again.
    Jobs.PULL_CLOSED: Options(_ONCE, result_ttl=3600),
    Jobs.MERGE_GROUP_GONE: Options(_ONCE, result_ttl=3600),
    # What a dispatch fans out to.
    Jobs.PLAN_PROJECT: replace(_PLAN, per_project=True),
    Jobs.PLAN_PROJECTS: _PLAN,  # a batch: its timeout counts each of its projects
    Jobs.PLAN_AND_PUBLISH: replace(_PLAN, seconds=PUBLISH_TIMEOUT, per_project=True),
    Jobs.JOINED: Options(JOIN_TIMEOUT),
    Jobs.PUBLISH_PLAN: Options(PUBLISH_TIMEOUT),
    Jobs.PUBLISH_MERGE_GROUP: Options(PUBLISH_TIMEOUT),
    Jobs.APPLY_PROJECT: Options(tf_steps=5, result_ttl=DAY, failure_ttl=7 * DAY, per_project=True),
    Jobs.FINISH_APPLY: Options(600),
    Jobs.DRIFT_CHECK: Options(600, retry=None, on_failure=None),  # the next tick checks again
    Jobs.DRIFT_PROJECT: Options(tf_steps=4, per_project=True),
    # `/accept-drift`: re-run when its worker dies, as its recorded phase allows (never a second apply).
    Jobs.ACCEPT_DRIFT: Options(tf_steps=5, result_ttl=DAY, failure_ttl=7 * DAY, per_project=True),
    # Said once, on the commands queue, when a job that owes a report failed for good (workers.watchdog).
    Jobs.LAST_WORD: Options(600, retry=SAY_AGAIN, on_failure=None),
}


def project_rate_limit(repo_id: int, project: Project) -> RateLimit:
    """One job at a time per (repo, dir, workspace) across all workers: two never share a state lock."""
    slug = hashlib.sha256(f"{project.dir}\0{project.workspace}".encode()).hexdigest()[:16]
    return RateLimit(key=f"project-{repo_id}-{slug}", concurrency=1)
