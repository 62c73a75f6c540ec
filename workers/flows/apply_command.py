"""`/apply` in the issue plangate opened for a project whose apply failed, or for its drift: the apply
branch's head planned afresh for that project and applied through the gate, the issue being where the
apply talks to humans (its destroys and code run at apply wait for `/approve-destroy` there).

Whoever may `/plan` may ask for it: it applies nothing a push of the branch's head would not. The
writer of `/apply` counts as an author of that apply, like the head commit's authors (as for a direct
push) and those of the failed push: none of them may approve what it holds.
"""

from __future__ import annotations

from dataclasses import replace

from core.config import ConfigError, RepoConfig
from core.contract import ApplyConversation, CommandRequest, PushRequest
from core.projects import Project
from core.render.failed_apply import render_apply_elsewhere, render_apply_started
from core.render.replies import render_not_allowed, render_refusal
from workers.adapters.github import GitHub, commits
from workers.adapters.github.permissions import may_plan
from workers.adapters.github.repo_config import base_config
from workers.adapters.store import applies as apply_store
from workers.adapters.store import audit, drift_issues, failed_applies
from workers.context import WorkerContext
from workers.flows.outcome import Outcome


async def decide(ctx: WorkerContext, gh: GitHub, req: CommandRequest) -> Outcome:
    failed = None if req.is_pr else failed_applies.on_issue(ctx.redis, req.repo_id, req.number)
    watched = None if req.is_pr or failed else drift_issues.watched(ctx.redis, req.repo_id, req.number)
    if failed is not None:
        project, earlier = failed.project, failed.authors
    elif watched is not None:
        project, earlier = Project.from_plain(watched["project"]), ()
    else:
        return Outcome(render_apply_elsewhere(reply_to=req.comment_id), "confused")
    allowed = await may_plan(gh, req.repo, req.commenter, req.commenter_type)
    if not allowed.allowed:
        return Outcome(
            render_not_allowed(req.commenter, allowed.reason, command="apply", reply_to=req.comment_id), "-1"
        )
    try:
        policy = await base_config(gh, req.repo, req.default_branch)
    except ConfigError as exc:
        reason = f"the default branch's .plangate.yml is invalid ({exc}); fix it first"
        return Outcome(render_refusal(reason, command="apply", reply_to=req.comment_id), "confused")
    branch = policy.apply_branch or req.default_branch
    head = await commits.branch_head(gh, req.repo, branch)
    try:  # the project as the head's own `.plangate.yml` has it now, as a push of the head would
        at_head = policy if branch == req.default_branch else await base_config(gh, req.repo, head)
    except ConfigError as exc:
        reason = f"the `.plangate.yml` of `{branch}` is invalid ({exc}); fix it first"
        return Outcome(render_refusal(reason, command="apply", reply_to=req.comment_id), "confused")
    current = project_now(project, at_head)
    if isinstance(current, str):
        return Outcome(render_refusal(current, command="apply", reply_to=req.comment_id), "confused")
    project = current
    authors = tuple(dict.fromkeys([*await commits.commit_logins(gh, req.repo, head), req.commenter, *earlier]))
    push = PushRequest(**req.target(), before=head, after=head, branch=branch, authors=authors)
    where = ApplyConversation(number=req.number, is_pr=False, authors=authors, approved_on=None)
    run = apply_store.hold(push, project, where, req.number, False, [])
    audit.record(ctx.redis, "apply-requested", repo=req.repo, number=req.number, sha=head, by=req.commenter)
    reply = render_apply_started(project.name, head, branch, reply_to=req.comment_id)
    return Outcome(reply, "+1", reapply=[run])


def project_now(project: Project, config: RepoConfig) -> Project | str:
    """The issue's project (as recorded when it failed, or at the last drift check) as `config` (the
    apply branch head's) declares it now; why `/apply` is refused when it no longer may be applied: a
    project since set to `apply_on_merge: false`, removed, or (a deleted project whose destroy failed)
    added back. Discovered projects (no `projects:` list) are always applied on merge."""
    if config.projects is None:
        return project
    key = (project.name, project.workspace, project.dir)
    found = next((p for p in config.projects if (p.name, p.workspace, p.dir) == key), None)
    if project.destroy_from is not None:
        if found is not None:
            return f"`{project.name}` was added back since its destroy failed: a push that changes it plans it"
        return project
    if found is None:
        return f"`{project.name}` (dir `{project.dir}`, workspace `{project.workspace}`) is no longer a project"
    if not found.apply_on_merge:
        return f"`{project.name}` has `apply_on_merge: false`: plangate does not apply it"
    return replace(project, tool=found.tool, apply_on_merge=True)
