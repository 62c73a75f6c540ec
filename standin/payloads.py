"""Webhook payloads shaped like GitHub's (see tests/fixtures/github/webhooks), built from live state."""

from __future__ import annotations

from standin import gitops, identities, pulls, shapes
from standin.shapes import Json
from standin.state import Comment, PullRequest, Repo, State, User

ZERO_SHA = "0" * 40
MAX_PUSH_COMMITS = 20  # GitHub lists at most 20 commits in a push payload


def _common(state: State, repo: Repo, sender: User, base: str) -> Json:
    out: Json = {"repository": shapes.repo(repo, base), "sender": shapes.user(sender, base)}
    if repo.installation_id is not None:
        out["installation"] = {
            "id": repo.installation_id,
            "node_id": shapes.node_id("Installation", repo.installation_id),
        }
    return out


def pull_request(
    state: State, repo: Repo, pr: PullRequest, action: str, sender: User, base: str, before: str | None = None
) -> Json:
    """`pull_request` opened/reopened/synchronize/closed; synchronize carries before/after."""
    payload: Json = {"action": action, "number": pr.number, "pull_request": pulls.pull_json(state, repo, pr, base)}
    if action == "synchronize":
        payload["before"] = before
        payload["after"] = pr.head_sha
    return {**payload, **_common(state, repo, sender, base)}


def issue_comment(
    state: State, repo: Repo, comment: Comment, action: str, sender: User, base: str, old_body: str | None = None
) -> Json:
    """`issue_comment` created/edited/deleted; `issue.pull_request` is present when the issue is a PR."""
    payload: Json = {"action": action}
    if action == "edited":
        payload["changes"] = {"body": {"from": old_body}}
    payload["issue"] = shapes.issue(state, repo, comment.number, base)
    payload["comment"] = shapes.comment(comment, repo, state, base)
    return {**payload, **_common(state, repo, sender, base)}


def _person(state: State, name: str, email: str) -> Json:
    """A commit's author or committer: `username` only when GitHub links the email to a user."""
    user = identities.user_of(state, email)
    return {"name": name, "email": email, **({"username": user.login} if user is not None else {})}


def _commit(state: State, repo: Repo, sha: str, base: str) -> Json:
    fmt = "%T%x1f%B%x1f%aI%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%P"
    tree, message, when, an, ae, cn, ce, parents = gitops.git(repo.path, "show", "-s", f"--format={fmt}", sha).split(
        "\x1f"
    )
    first_parent = parents.split()[0] if parents.strip() else gitops.EMPTY_TREE
    changed: dict[str, list[str]] = {"added": [], "removed": [], "modified": []}
    kinds = {"A": "added", "D": "removed"}
    for line in gitops.git(repo.path, "diff", "--no-renames", "--name-status", first_parent, sha).splitlines():
        code, _, path = line.partition("\t")
        changed[kinds.get(code[:1], "modified")].append(path)
    return {
        "id": sha,
        "tree_id": tree,
        "distinct": True,
        "message": message.rstrip("\n"),
        "timestamp": when,
        "url": f"{base}/{repo.full_name}/commit/{sha}",
        "author": _person(state, an, ae),
        "committer": _person(state, cn, ce),
        **changed,
    }


def push(
    state: State, repo: Repo, ref: str, before: str, after: str, sender: User, base: str, forced: bool = False
) -> Json:
    """`push` to a branch: the commits between before and after (newest 20), head_commit, pusher."""
    span = after if before == ZERO_SHA else f"{before}..{after}"
    shas = gitops.git(repo.path, "rev-list", "--reverse", span).split()[-MAX_PUSH_COMMITS:]
    commits = [_commit(state, repo, sha, base) for sha in shas]
    head = commits[-1] if commits and commits[-1]["id"] == after else _commit(state, repo, after, base)
    payload: Json = {
        "ref": ref,
        "before": before,
        "after": after,
        "created": before == ZERO_SHA,
        "deleted": False,
        "forced": forced,
        "base_ref": None,
        "compare": f"{base}/{repo.full_name}/compare/{before[:12]}...{after[:12]}",
        "commits": commits,
        "head_commit": head,
        "pusher": {"name": sender.login, "email": f"{sender.login}@users.noreply.github.com"},
    }
    common = _common(state, repo, sender, base)
    common["repository"] = {**common["repository"], "master_branch": repo.default_branch}
    return {**payload, **common}
