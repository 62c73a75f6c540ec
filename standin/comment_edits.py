"""Editing and deleting issue and PR comments as GitHub allows it: by the comment's author, or by anyone with
write access to the repository, so a writer can rewrite or remove the App's own comments too.

GitHub keeps who edited a comment and when (the "edited" menu); the stand-in keeps it on `Comment.edits`.
"""

from __future__ import annotations

from standin.state import WRITERS, Comment, CommentEdit, State, User, utcnow

# An App's installation moderates comments with the write permission of the kind of issue they are on.
APP_PERMISSIONS = ("issues", "pull_requests")


def may_change(state: State, comment: Comment, user: User) -> bool:
    """The author, anyone with write, maintain or admin permission, and the App when its installation may write."""
    repo = state.repos[comment.repo_id]
    if user.login == comment.user.login or state.permission(repo, user.login) in WRITERS:
        return True
    if user.login != state.app.bot.login or repo.installation_id is None:
        return False
    granted = state.installations[repo.installation_id].permissions
    return any(granted.get(name) == "write" for name in APP_PERMISSIONS)


def _check(state: State, comment: Comment, user: User) -> None:
    if comment.deletion is not None:
        raise ValueError(f"comment {comment.id} was deleted")
    if not may_change(state, comment, user):
        raise PermissionError(f"{user.login} may not change comment {comment.id}: only its author and writers may")


def edit(state: State, comment: Comment, body: str, editor: User) -> str:
    """Change the body, bump `updated_at`, keep who did it; returns the old body (the webhook's `changes`)."""
    with state.lock:
        _check(state, comment, editor)
        old, now = comment.body, utcnow()
        comment.edits.append(CommentEdit(editor, now, old))
        comment.body, comment.updated_at = body, now
        return old


def delete(state: State, comment: Comment, deleter: User) -> None:
    with state.lock:
        _check(state, comment, deleter)
        comment.deletion = CommentEdit(deleter, utcnow(), comment.body)
        state.comments.pop(comment.id, None)
