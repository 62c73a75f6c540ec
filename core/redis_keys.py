"""Every Redis key plangate uses, and how long each lives: one place, for the web process and the workers.

Redis is queue and cache: GitHub is the system of record. Keys that can move the gate (approvals,
destroy sets, held applies, the applied guard, the bot login, comment ids) are sealed by the workers
(plumbing.records); the others hold nothing an attacker could use to unlock an apply.
"""

from __future__ import annotations

DAY = 24 * 3600
GATE_TTL = 90 * DAY  # approvals, destroy sets, held applies, comment ids: as long as a PR may stay open
PLAN_META_TTL = 7 * DAY
PLAN_RESULT_TTL = DAY  # RQ keeps a plan job's result this long; a push may carry it forward until then
FORK_REFUSED_TTL = 90 * DAY
PR_PLANS_TTL = 30 * DAY
REPLAN_PENDING_TTL = 3600  # a re-plan that never ran (its worker died) frees the slot after this long
MQ_GONE_TTL = DAY
SANDBOX_TTL = 7 * DAY
APPLY_PHASE_TTL = 7 * DAY
RUN_TTL = {"apply": 7 * DAY, "accept-drift": 7 * DAY}  # a run page lives as long as its job's result
RUN_DEFAULT_TTL = DAY  # plans, drift checks, merge groups: like a plan job's result

# Counters the workers keep and /metrics reads (hashes).
GATE_DECISIONS = "plangate:metrics:gate-decisions"
GITHUB_RETRIES = "plangate:metrics:github-retries"  # "endpoint|reason" → retries
GITHUB_RATE_LIMITED = "plangate:metrics:github-rate-limited"  # "endpoint|primary|secondary" → answers
GITHUB_WAITED = "plangate:metrics:github-wait-seconds"  # "rate-limit" | "pacing" → seconds
GITHUB_REMAINING = "plangate:metrics:github-ratelimit-remaining"  # installation → last x-ratelimit-remaining
JOBS = "plangate:metrics:jobs"  # "recovered" | "abandoned" | "deferred" → count

RUNS = "plangate:runs"  # the status page's run log (a capped list)
DRIFT_TARGETS = "plangate:drift-targets"
BOT_LOGIN = "plangate:bot-login"
RATE_LIMITED_PREFIX = "plangate:rate-limited:"  # + installation → kind, expiring with the wait
SANDBOX_PREFIX = "plangate:sandbox:"  # + worker → how it runs terraform
FAILED_APPLIES_PREFIX = "plangate:failed-applies:"  # + repo id → the projects whose last apply failed
SESSION_PREFIX = "plangate:status-session:"  # + session id → the signed-in person's view


def head(repo_id: int, pr: int) -> str:
    """The SHA a PR is planned at now: results of older SHAs are not posted."""
    return f"plangate:head:{repo_id}:{pr}"


def approvals(repo_id: int, number: int, sha: str) -> str:
    return f"plangate:approvals:{repo_id}:{number}:{sha}"


def destroys(repo_id: int, number: int, sha: str) -> str:
    return f"plangate:destroys:{repo_id}:{number}:{sha}"


def plan_meta(repo_id: int, pr: int, sha: str) -> str:
    return f"plangate:plan-meta:{repo_id}:{pr}:{sha}"


def last_plans(repo_id: int, pr: int) -> str:
    """The PR's last published plans, per project: what the next push may carry forward."""
    return f"plangate:last-plans:{repo_id}:{pr}"


def fork_refused(repo_id: int, pr: int) -> str:
    return f"plangate:fork-refused:{repo_id}:{pr}"


def comments(repo_id: int, number: int, kind: str) -> str:
    return f"plangate:comments:{repo_id}:{number}:{kind}"


def comment_url(repo_id: int, number: int, kind: str) -> str:
    """Part 1's URL: the next publish links its reports to it while the comment is being edited."""
    return f"plangate:comment-url:{repo_id}:{number}:{kind}"


def written(repo_id: int, comment_id: int) -> str:
    """What plangate last wrote in one of its comments: someone else's change is noticed and put back."""
    return f"plangate:written:{repo_id}:{comment_id}"


def written_issue(repo_id: int, number: int) -> str:
    """What plangate last wrote as the body of an issue it opened."""
    return f"plangate:written-issue:{repo_id}:{number}"


def pushers(repo_id: int, pr: int) -> str:
    """Who pushed to a PR's branch, as the `synchronize` webhooks said: none of them may approve it."""
    return f"plangate:pushers:{repo_id}:{pr}"


def unapplied_authors(repo_id: int, identity: str) -> str:
    """Who made the project's pushes since its last successful apply: authors of its next apply too."""
    return f"plangate:unapplied-authors:{repo_id}:{identity}"


def sha_gates(repo_id: int, sha: str) -> str:
    """Whether each open PR at a commit has its destroys approved: the commit's one `plangate/destroy`
    passes only when all of them have."""
    return f"plangate:sha-gates:{repo_id}:{sha}"


def blocked(repo_id: int, number: int) -> str:
    return f"plangate:blocked:{repo_id}:{number}"


def blocked_project(repo_id: int, identity: str) -> str:
    return f"plangate:blocked-project:{repo_id}:{identity}"


def applied(repo_id: int, identity: str) -> str:
    return f"plangate:applied:{repo_id}:{identity}"


def apply_phase(run_id: str) -> str:
    return f"plangate:apply-phase:{run_id}"


def apply_outcomes(repo_id: int, sha: str) -> str:
    return f"plangate:apply-outcomes:{repo_id}:{sha}"


def failed_applies(repo_id: int) -> str:
    """The repository's projects whose last apply on the apply branch failed, by identity."""
    return f"{FAILED_APPLIES_PREFIX}{repo_id}"


def drift_issue(repo_id: int, project: str) -> str:
    return f"plangate:drift-issue:{repo_id}:{project}"


def drift_by_issue(repo_id: int, number: int) -> str:
    return f"plangate:drift-by-issue:{repo_id}:{number}"


def pr_plans(repo_id: int) -> str:
    """Open PRs' latest plans by the projects they cover (to re-plan them when main moves)."""
    return f"plangate:pr-plans:{repo_id}"


def replan_pending(repo_id: int, pr: int) -> str:
    return f"plangate:replan-pending:{repo_id}:{pr}"


def mq_gone(repo_id: int, head_sha: str) -> str:
    """A merge group the queue dropped: its results are published to no one."""
    return f"plangate:mq-gone:{repo_id}:{head_sha}"


def installation_token(installation_id: int) -> str:
    return f"plangate:installation-token:{installation_id}"


def installation_token_lock(installation_id: int) -> str:
    return f"plangate:installation-token-lock:{installation_id}"


def pace(installation_id: int) -> str:
    return f"plangate:pace:{installation_id}"


def check_runs(repo: str, sha: str) -> str:
    return f"plangate:check-runs:{repo}:{sha}"


def apply_order(repo_id: int, sha: str) -> str:
    """The order a push's applies run in (core.apply_order.waits), for an apply run again without it."""
    return f"plangate:apply-order:{repo_id}:{sha}"


def waiting_applies(repo_id: int, dependency: str) -> str:
    """The applies a project's failed or held apply stopped (workers.adapters.store.waiting_applies)."""
    return f"plangate:waiting-applies:{repo_id}:{dependency}"


def run(run_id: str) -> str:
    """A run page's record (core.runs): head, plan and gate, each sealed."""
    return f"plangate:run:{run_id}"


def run_output(run_id: str) -> str:
    """A run's output, a stream of sealed masked lines: a stream id is where a reader resumes."""
    return f"plangate:run:{run_id}:out"


def runs_at(repo_id: int, sha: str) -> str:
    """The ids of the runs about one commit (its projects' pages link each other)."""
    return f"plangate:runs-at:{repo_id}:{sha}"


# A multi-project PR plan's progress in its plan comment (workers.flows.plan_progress).
PROGRESS_TTL = DAY  # as long as a plan job's result: a dispatch's progress means nothing after it
PUBLISHED_TTL = 7 * DAY  # a SHA's plan published: no progress of that SHA edits the comment again
PROGRESS_EVERY = 10  # seconds between two progress edits of one PR's comment, across all workers
COMMENT_LOCK_TTL = 60  # seconds a progress edit may hold a PR's comment: far above one GitHub request


def progress(repo_id: int, pr: int, sha: str) -> str:
    """A dispatch's projects to plan at `sha` (identity → label), sealed."""
    return f"plangate:progress:{repo_id}:{pr}:{sha}"


def progress_jobs(repo_id: int, pr: int, sha: str) -> str:
    """identity → the RQ job planning it (a hash): whose run page the progress links."""
    return f"plangate:progress:{repo_id}:{pr}:{sha}:jobs"


def progress_done(repo_id: int, pr: int, sha: str) -> str:
    """The (identity, job) pairs whose plan has ended (a set)."""
    return f"plangate:progress:{repo_id}:{pr}:{sha}:done"


def progress_turn(repo_id: int, pr: int) -> str:
    """Held for PROGRESS_EVERY seconds after a progress edit of the PR's comment: the next waits."""
    return f"plangate:progress-turn:{repo_id}:{pr}"


def comment_lock(repo_id: int, pr: int) -> str:
    """Held while a progress edit or the publish writes the PR's plan comment."""
    return f"plangate:comment-lock:{repo_id}:{pr}"


def plan_published(repo_id: int, pr: int, sha: str) -> str:
    """Set (sealed) when the publish of `sha` begins: progress of `sha` never edits after it."""
    return f"plangate:plan-published:{repo_id}:{pr}:{sha}"
