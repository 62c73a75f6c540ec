"""GitHub's "Commit" object (pulls/list-commits): git's author and committer as written, and beside them the
users GitHub links their emails to, null when it links them to nobody."""

from __future__ import annotations

import base64

from standin import identities, shapes
from standin.gitops import CommitInfo, Identity
from standin.shapes import Json
from standin.state import Repo, State, iso


def _git_user(who: Identity, when: str) -> Json:
    return {"name": who.name, "email": who.email, "date": when}


def _user(state: State, who: Identity, base: str) -> Json | None:
    user = identities.user_of(state, who.email)
    return shapes.user(user, base) if user is not None else None


def commit(state: State, repo: Repo, c: CommitInfo, base: str) -> Json:
    api = f"{base}/repos/{repo.full_name}"
    return {
        "url": f"{api}/commits/{c.sha}",
        "sha": c.sha,
        "node_id": base64.b64encode(f"06:Commit{repo.id}:{c.sha}".encode()).decode(),
        "html_url": f"{base}/{repo.full_name}/commit/{c.sha}",
        "comments_url": f"{api}/commits/{c.sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{c.sha}",
            "author": _git_user(c.author, iso(c.authored)),
            "committer": _git_user(c.committer, iso(c.committed)),
            "message": c.message,
            "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "author": _user(state, c.author, base),
        "committer": _user(state, c.committer, base),
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{base}/{repo.full_name}/commit/{p}"}
            for p in c.parents
        ],
    }
