"""When the apply branch moves, the open PRs planned against its old code go stale.

Each published PR plan is indexed by the project identities it covers. A push to the apply branch
that changes one of them marks those PRs' plan comments stale ("main moved at SHA; this plan may
differ from what merging applies") and re-plans them on GitHub's test merge (`merge_commit_sha`),
so reviewers approve what merging will really do. At most one re-plan per PR is pending at a time:
pushes in a burst coalesce into the next one, which plans the newest merge. `.plangate.yml` on the
default branch can turn it off (`replan_on_base_change: false`).
"""

from __future__ import annotations

from plumbing.records import Records
from workers.adapters.github import GitHub, comments, vcs
from workers.adapters.store import written

STALE_MARKER = "<!-- plangate:stale -->"
MAX_BODY = 65_536


def stale_note(pushed: str, branch: str) -> str:
    return (
        f"{STALE_MARKER}\n> [!WARNING]\n> `{branch}` moved at {pushed[:7]}: this plan may differ from what merging "
        "applies. plangate re-plans it on the merge with the new code.\n\n"
    )


async def mark_stale(
    gh: GitHub, records: Records, *, repo: str, repo_id: int, number: int, comment_id: int, note: str
) -> None:
    """Prepend the note to the plan comment (once: a later push replaces an earlier note), to the text
    plangate wrote there: what someone else may have written in it meanwhile is not kept."""
    was = written.lookup(records, repo_id, comment_id)
    if was is not None:
        body = was.body
    else:
        comment = await comments.get_comment(gh, repo, comment_id)
        if comment is None:
            return
        body = str(comment.get("body") or "")
    head, _, rest = body.partition("\n")
    if STALE_MARKER in rest:
        rest = rest[rest.index("\n\n", rest.index(STALE_MARKER)) + 2 :]
    marked = f"{head}\n{note}{rest}"
    if len(marked) <= MAX_BODY:  # a comment already at GitHub's limit stays as it is; the re-plan replaces it
        await vcs.edit_comment(
            gh, records, repo=repo, repo_id=repo_id, number=number, comment_id=comment_id, body=marked
        )
