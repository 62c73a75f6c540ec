"""GitHub's JSON shapes for the objects the stand-in serves, shared by REST responses and webhooks."""

from __future__ import annotations

import base64
from typing import Any

from standin.rollups import reactions
from standin.state import (
    App,
    Comment,
    Installation,
    Issue,
    PullRequest,
    Repo,
    State,
    Status,
    User,
    iso,
)

Json = dict[str, Any]


def node_id(kind: str, ident: int) -> str:
    return base64.b64encode(f"0{len(kind)}:{kind}{ident}".encode()).decode()


def user(u: User, base: str) -> Json:
    """GitHub's "Simple User", with every URL it always carries."""
    api = f"{base}/users/{u.login}"
    return {
        "login": u.login,
        "id": u.id,
        "node_id": node_id(u.type, u.id),
        "avatar_url": f"{base}/avatars/u/{u.id}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{base}/{u.login}",
        **{
            f"{name}_url": f"{api}/{name}"
            for name in ("events", "followers", "organizations", "repos", "subscriptions")
        },
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "received_events_url": f"{api}/received_events",
        "type": u.type,
        "site_admin": False,
    }


def repo(r: Repo, base: str) -> Json:
    api = f"{base}/repos/{r.full_name}"
    return {
        "id": r.id,
        "node_id": node_id("Repository", r.id),
        "name": r.name,
        "full_name": r.full_name,
        "private": r.private,
        "owner": user(r.owner, base),
        "html_url": f"{base}/{r.full_name}",
        "description": None,
        "fork": False,
        "url": api,
        "pulls_url": f"{api}/pulls{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "git_url": f"git://{base.split('://', 1)[-1]}/{r.full_name}.git",
        "ssh_url": f"git@{base.split('://', 1)[-1]}:{r.full_name}.git",
        "clone_url": f"{base}/{r.full_name}.git",
        "default_branch": r.default_branch,
        "visibility": "private" if r.private else "public",
        "archived": False,
        "disabled": False,
    }


def app(a: App, base: str) -> Json:
    return {
        "id": a.id,
        "slug": a.slug,
        "node_id": node_id("Integration", a.id),
        "client_id": a.client_id,
        "owner": None,
        "name": a.name,
        "description": "",
        "external_url": base,
        "html_url": f"{base}/apps/{a.slug}",
        "permissions": dict(a.permissions),
        "events": ["pull_request", "issue_comment", "push"],
    }


def installation(inst: Installation, a: App, base: str) -> Json:
    return {
        "id": inst.id,
        "account": user(inst.account, base),
        "repository_selection": "selected",
        "access_tokens_url": f"{base}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{base}/installation/repositories",
        "html_url": f"{base}/settings/installations/{inst.id}",
        "app_id": a.id,
        "app_slug": a.slug,
        "client_id": a.client_id,
        "target_id": inst.account.id,
        "target_type": inst.account.type,
        "permissions": dict(inst.permissions),
        "events": app(a, base)["events"],
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "suspended_at": None,
        "suspended_by": None,
    }


def _issue_common(r: Repo, number: int, base: str) -> Json:
    """What issues and PRs both carry: their links, and the fields the stand-in keeps no record of."""
    api = f"{base}/repos/{r.full_name}"
    return {
        "url": f"{api}/issues/{number}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{number}/labels{{/name}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "events_url": f"{api}/issues/{number}/events",
        "active_lock_reason": None,
        "reactions": reactions(f"{api}/issues/{number}/reactions", ()),
    }


def issue(state: State, r: Repo, number: int, base: str) -> Json:
    """An issue, or the issue side of a PR (then with `pull_request` links)."""
    pr = state.pulls.get((r.id, number))
    comments = sum(1 for c in state.comments.values() if c.repo_id == r.id and c.number == number)
    if pr is not None:
        return {
            **_issue_common(r, number, base),
            "html_url": f"{base}/{r.full_name}/pull/{number}",
            "id": pr.id,
            "node_id": node_id("PullRequest", pr.id),
            "number": number,
            "title": pr.title,
            "user": user(pr.author, base),
            "labels": [],
            "state": pr.state,
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": comments,
            "created_at": iso(pr.created_at),
            "updated_at": iso(pr.updated_at),
            "closed_at": iso(pr.closed_at) if pr.closed_at else None,
            "author_association": "NONE",
            "draft": False,
            "pull_request": {
                "url": f"{base}/repos/{r.full_name}/pulls/{number}",
                "html_url": f"{base}/{r.full_name}/pull/{number}",
                "diff_url": f"{base}/{r.full_name}/pull/{number}.diff",
                "patch_url": f"{base}/{r.full_name}/pull/{number}.patch",
                "merged_at": iso(pr.merged_at) if pr.merged_at else None,
            },
            "body": pr.body,
        }
    i: Issue = state.issues[(r.id, number)]
    return {
        **_issue_common(r, number, base),
        "html_url": f"{base}/{r.full_name}/issues/{number}",
        "id": i.id,
        "node_id": node_id("Issue", i.id),
        "number": number,
        "title": i.title,
        "user": user(i.author, base),
        "labels": [label(r, name, base) for name in i.labels],
        "state": i.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": comments,
        "created_at": iso(i.created_at),
        "updated_at": iso(i.updated_at),
        "closed_at": iso(i.closed_at) if i.closed_at else None,
        "author_association": "NONE",
        "body": i.body,
    }


def label(r: Repo, name: str, base: str) -> Json:
    ident = abs(hash((r.id, name))) % 10**9
    return {
        "id": ident,
        "node_id": node_id("Label", ident),
        "url": f"{base}/repos/{r.full_name}/labels/{name}",
        "name": name,
        "description": None,
        "color": "ededed",
        "default": False,
    }


def comment(c: Comment, r: Repo, state: State, base: str) -> Json:
    kind = "pull" if (r.id, c.number) in state.pulls else "issues"
    return {
        "id": c.id,
        "node_id": node_id("IssueComment", c.id),
        "url": f"{base}/repos/{r.full_name}/issues/comments/{c.id}",
        "html_url": f"{base}/{r.full_name}/{kind}/{c.number}#issuecomment-{c.id}",
        "issue_url": f"{base}/repos/{r.full_name}/issues/{c.number}",
        "body": c.body,
        "user": user(c.user, base),
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "author_association": "NONE",
        "performed_via_github_app": app(state.app, base) if c.user.type == "Bot" else None,
        "reactions": reactions(
            f"{base}/repos/{r.full_name}/issues/comments/{c.id}/reactions",
            (x.content for x in state.reactions if x.comment_id == c.id),
        ),
    }


def _branch(r: Repo, ref: str, sha: str, base: str, full_name: str | None = None) -> Json:
    shown = repo(r, base)
    if full_name and full_name != r.full_name:  # a fork: another repository holds the branch
        owner, name = full_name.split("/", 1)
        shown = {**shown, "id": r.id + 10**6, "name": name, "full_name": full_name, "fork": True}
        shown["owner"] = {**shown["owner"], "login": owner}
        shown["clone_url"] = f"{base}/{full_name}.git"
    return {"label": f"{shown['owner']['login']}:{ref}", "ref": ref, "sha": sha, "user": shown["owner"], "repo": shown}


def pull(pr: PullRequest, r: Repo, base: str, changed_files: int, commits: int, review_comments: int = 0) -> Json:
    api = f"{base}/repos/{r.full_name}"
    html = f"{base}/{r.full_name}/pull/{pr.number}"
    return {
        "url": f"{api}/pulls/{pr.number}",
        "id": pr.id,
        "node_id": node_id("PullRequest", pr.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{pr.number}",
        "commits_url": f"{api}/pulls/{pr.number}/commits",
        "comments_url": f"{api}/issues/{pr.number}/comments",
        "review_comments_url": f"{api}/pulls/{pr.number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "statuses_url": f"{api}/statuses/{pr.head_sha}",
        "number": pr.number,
        "state": pr.state,
        "locked": False,
        "title": pr.title,
        "user": user(pr.author, base),
        "body": pr.body,
        "labels": [],
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "closed_at": iso(pr.closed_at) if pr.closed_at else None,
        "merged_at": iso(pr.merged_at) if pr.merged_at else None,
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "active_lock_reason": None,
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _branch(r, pr.head_ref, pr.head_sha, base, pr.head_repo_full_name),
        "base": _branch(r, pr.base_ref, pr.base_sha, base),
        "_links": {
            "self": {"href": f"{api}/pulls/{pr.number}"},
            "html": {"href": html},
            "issue": {"href": f"{api}/issues/{pr.number}"},
            "comments": {"href": f"{api}/issues/{pr.number}/comments"},
            "review_comments": {"href": f"{api}/pulls/{pr.number}/comments"},
            "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/pulls/{pr.number}/commits"},
            "statuses": {"href": f"{api}/statuses/{pr.head_sha}"},
        },
        "author_association": "NONE",
        "auto_merge": None,
        "draft": False,
        "merged": pr.merged,
        "mergeable": None if pr.merged else True,
        "mergeable_state": "unknown" if pr.merged else "clean",
        "merged_by": user(pr.merged_by, base) if pr.merged_by else None,
        "comments": 0,
        "review_comments": review_comments,
        "maintainer_can_modify": pr.maintainer_can_modify,
        "commits": commits,
        "additions": 0,
        "deletions": 0,
        "changed_files": changed_files,
    }


def status(s: Status, r: Repo, base: str, with_creator: bool = True) -> Json:
    out: Json = {
        "url": f"{base}/repos/{r.full_name}/statuses/{s.sha}",
        "avatar_url": f"{base}/avatars/u/{s.creator.id}",
        "id": s.id,
        "node_id": node_id("StatusContext", s.id),
        "state": s.state,
        "description": s.description,
        "target_url": s.target_url,
        "context": s.context,
        "created_at": iso(s.created_at),
        "updated_at": iso(s.created_at),
    }
    if with_creator:
        out["creator"] = user(s.creator, base)
    return out
