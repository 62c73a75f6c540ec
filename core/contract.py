"""The contract between the web process and the workers: queues, job ids, typed job payloads, status
contexts (plumbing.enqueue puts a job on its queue).

The web process builds a payload once (from the webhook) and enqueues the job by its dotted name, so
it never imports the job code; the job reads the payload's attributes. Payloads hold plain values
only (ids, names, SHAs), never a token or a client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from core.trigger import PUSHED, Trigger, Why

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Jobs:
    """Every job's function, by the dotted name RQ stores: the web process enqueues by name and never
    imports the job code (tests/test_job_names.py checks that each names a job of workers.jobs, and
    that every job has a name here)."""

    PLAN_PR: Final = "workers.jobs.plan_pr"
    PLAN_PROJECT: Final = "workers.jobs.plan_project"
    PLAN_PROJECTS: Final = "workers.jobs.plan_projects"
    PLAN_AND_PUBLISH: Final = "workers.jobs.plan_and_publish"
    JOINED: Final = "workers.jobs.joined"
    PUBLISH_PLAN: Final = "workers.jobs.publish_plan"
    PLAN_MERGE_GROUP: Final = "workers.jobs.plan_merge_group"
    PUBLISH_MERGE_GROUP: Final = "workers.jobs.publish_merge_group"
    HANDLE_COMMAND: Final = "workers.jobs.handle_command"
    RESTORE_COMMENT: Final = "workers.jobs.restore_comment"
    REVIEW_DISMISSED: Final = "workers.jobs.review_dismissed"
    APPLY_PUSH: Final = "workers.jobs.apply_push"
    APPLY_PROJECT: Final = "workers.jobs.apply_project"
    FINISH_APPLY: Final = "workers.jobs.finish_apply"
    REFRESH_DRIFT_TARGETS: Final = "workers.jobs.refresh_drift_targets"
    DRIFT_TICK: Final = "workers.jobs.drift_tick"
    DRIFT_CHECK: Final = "workers.jobs.drift_check"
    DRIFT_PROJECT: Final = "workers.jobs.drift_project"
    ACCEPT_DRIFT: Final = "workers.jobs.accept_drift"
    LAST_WORD: Final = "workers.jobs.last_word"
    RECOVER_LOST_WORK: Final = "workers.jobs.recover_lost_work"
    PULL_CLOSED: Final = "workers.jobs.pull_closed"
    MERGE_GROUP_GONE: Final = "workers.jobs.merge_group_gone"


# Commands first: a person is waiting for the reaction to their comment.
COMMANDS_QUEUE = "plangate-commands"
PLANS_QUEUE = "plangate-plans"
QUEUE_NAMES = (COMMANDS_QUEUE, PLANS_QUEUE)
# A plan has no side effect, so a plan job whose worker died is run again, at most twice, a little
# later each time (a node coming back, memory freed). A command is not (its reply would be posted
# twice); an apply's project job re-runs only as its recorded phase allows (workers.flows.apply_phase).
PLAN_RETRIES = 2
RERUN_INTERVALS = (3, 15)  # seconds before each re-run
# Jobs that owe the PR (or push) a report: when one fails for good, its last word is said
# (workers.watchdog, from this failure callback of theirs).
LAST_WORD_JOBS = frozenset(
    {
        Jobs.PLAN_PR,
        Jobs.PUBLISH_PLAN,
        Jobs.PLAN_MERGE_GROUP,
        Jobs.PUBLISH_MERGE_GROUP,
        Jobs.APPLY_PUSH,
        Jobs.FINISH_APPLY,
        Jobs.HANDLE_COMMAND,
        # A reply in the drift issue. It fails for good only before `terraform apply`: a death during that
        # is reported by its own re-run (workers.flows.accept_drift), which ends without applying.
        Jobs.ACCEPT_DRIFT,
    }
)
JOB_FAILED = "workers.watchdog.failed"

PLAN_CONTEXT = "plangate/plan"
DESTROY_CONTEXT = "plangate/destroy"
APPLY_CONTEXT = "plangate/apply"
CONTEXTS = (PLAN_CONTEXT, DESTROY_CONTEXT, APPLY_CONTEXT)


def job_id(kind: str, repo_id: int, *parts: object) -> str:
    """Deterministic: a redelivered or duplicate event maps to the job that already exists. RQ takes
    only letters, digits, `_` and `-` in an id (it cuts one at a `:`), so anything else in a part (a
    timestamp's colons, a ref's slashes) becomes `_`."""
    return _UNSAFE.sub("_", "-".join([kind, str(repo_id), *(str(p) for p in parts)]))


@dataclass(frozen=True)
class RepoTarget:
    """The repository a job acts on, as the installation: what every request carries first."""

    installation_id: int
    repo_id: int
    repo: str
    clone_url: str
    default_branch: str

    def target(self) -> dict[str, Any]:
        """These five values, to build another request for the same repository."""
        return {f.name: getattr(self, f.name) for f in fields(RepoTarget)}


@dataclass(frozen=True)
class PlanRequest(RepoTarget):
    """Plan a PR's head (or a merge group's commit, as PR 0: no conversation): what to plan and as whom."""

    pr: int
    sha: str
    author: str
    fork: bool = False
    trigger: Trigger = PUSHED
    only: tuple[str, ...] = ()  # `/plan NAME ...`: plan these projects whether or not the PR changes them
    base_sha: str = ""  # the base branch's commit the PR is compared with: a deleted project is destroyed from it
    code_sha: str = ""  # the commit whose code is planned when it is not `sha` (the test merge)
    pusher: str = ""  # who pushed `sha` (a `synchronize` sender): an author of the PR from now on

    @classmethod
    def of_pull(
        cls,
        target: RepoTarget,
        pull: Mapping[str, Any],
        *,
        trigger: Trigger = PUSHED,
        only: tuple[str, ...] = (),
        pusher: str = "",
    ) -> PlanRequest:
        """The plan of a PR's head, from GitHub's pull request object (a webhook's or the REST API's):
        a head in another repository than `target` is a fork's."""
        head_repo = (pull["head"].get("repo") or {}).get("full_name")
        return cls(
            **target.target(),
            pr=int(pull["number"]),
            sha=str(pull["head"]["sha"]),
            base_sha=str((pull.get("base") or {}).get("sha") or ""),
            author=str(pull["user"]["login"]),
            fork=head_repo != target.repo,
            trigger=trigger,
            only=only,
            pusher=pusher,
        )

    @property
    def plans_test_merge(self) -> bool:
        """The base branch moved under the PR: GitHub's test merge is planned instead of the head."""
        return self.trigger.why is Why.BASE_MOVED

    @property
    def is_merge_group(self) -> bool:
        return self.trigger.why is Why.MERGE_GROUP

    def pull_url(self) -> str:
        """The PR's page (a repository's clone URL is its page plus `.git`, on GitHub and GHES alike)."""
        return f"{self.clone_url.removesuffix('.git')}/pull/{self.pr}"


@dataclass(frozen=True)
class PushRequest(RepoTarget):
    """A push to a branch: apply at `after` when it is the apply branch."""

    before: str
    after: str
    forced: bool = False
    branch: str = ""  # the pushed branch; applies happen only on the apply branch
    authors: tuple[str, ...] = ()  # the pusher and every commit author/committer login: never their own approvers


@dataclass(frozen=True)
class ApplyConversation:
    """Where an apply talks to humans: the merged PR, else the issue opened when it blocked."""

    number: int | None
    is_pr: bool
    authors: tuple[str, ...]  # a direct push's pusher and commit logins (a PR's: its opener; all are asked of GitHub)
    approved_on: str | None


@dataclass(frozen=True)
class CommandRequest(RepoTarget):
    """A slash command (or a check run button pressed, `via="check_run"`)."""

    number: int
    is_pr: bool
    comment_id: int
    commenter: str
    commenter_type: str
    command: str | None
    projects: tuple[str, ...] = ()
    near_miss: tuple[str, str, str] | None = None  # (written, suggestion, reason)
    issue_author: str = ""
    sha: str | None = None  # `/approve-destroy SHA`
    created_at: str | None = None  # when the comment was written (GitHub's clock): what its author could see
    # Where the command was written: "comment" (the PR's conversation), "review" (a review's body),
    # "review_comment" (a line comment in a review thread), or "check_run" (a button: no comment)
    via: str = "comment"
    event_id: str = ""  # the delivery of a button press: each press is its own command
    plan_digest: str = ""  # a button press: the digest of the plan its page showed (the action's identifier)
    reviewed_sha: str = ""  # a review or review comment: the commit it was written on
    thread: int = 0  # a review comment: the thread's first comment, which replies answer
    source_url: str = ""  # a review: its page, which the answer (a conversation comment) links

    @property
    def in_review(self) -> bool:
        return self.via in ("review", "review_comment")


@dataclass(frozen=True)
class ReviewDismissal(RepoTarget):
    """A review dismissed (`pull_request_review` `dismissed`): an approval it carried stops counting."""

    number: int
    review_id: int
    reviewer: str
    by: str  # who dismissed it


@dataclass(frozen=True)
class CommentChange(RepoTarget):
    """A comment edited or deleted by someone other than its author (`issue_comment` edited/deleted):
    when it is one of plangate's, plangate puts its text back."""

    number: int
    comment_id: int
    action: str  # "edited" | "deleted"
    by: str  # who changed it (the webhook's sender)
    at: str | None = None  # GitHub's time of the edit (the comment's updated_at); None for a delete


@dataclass(frozen=True)
class GroupRequest(RepoTarget):
    """A merge group's required checks (`merge_group` `checks_requested`)."""

    head_sha: str
    head_ref: str
    base_sha: str = ""

    def as_plan(self) -> PlanRequest:
        """The plan jobs' view: PR 0 (no conversation), the group's head, never superseded by a PR push."""
        return PlanRequest(
            **self.target(),
            pr=0,
            sha=self.head_sha,
            author="",
            trigger=Trigger(Why.MERGE_GROUP, self.head_ref),
            base_sha=self.base_sha,
        )
