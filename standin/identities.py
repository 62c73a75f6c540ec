"""Commit identities and the users GitHub links them to.

GitHub knows who wrote a commit only by its author and committer emails: an email a user owns links the commit
to that user (the REST `author`/`committer`, a push payload's `username`); any other email links it to nobody.
So a writer can put anyone's name on a commit, or no one's. The emails the stand-in's users own are GitHub's
no-reply addresses, `{id}+{login}@users.noreply.github.com` and the older `{login}@users.noreply.github.com`;
`noreply@github.com`, the committer of merges made on the site, is GitHub's `web-flow` user.
"""

from __future__ import annotations

import re

from standin.gitops import GITHUB, Identity
from standin.state import State, User

WEB_FLOW = "web-flow"
_NOREPLY = re.compile(r"^(?:(?P<id>\d+)\+)?(?P<login>[A-Za-z0-9-]+(?:\[bot\])?)@users\.noreply\.github\.com$", re.I)

Who = str | Identity  # a login (that user, created if new) or a git identity written as given


def of(state: State, who: Who) -> Identity:
    """The git identity to write: a login's is its user's no-reply address, which GitHub maps back to them."""
    if isinstance(who, Identity):
        return who
    user = state.user(who)
    return Identity(user.login, f"{user.id}+{user.login}@users.noreply.github.com")


def user_of(state: State, email: str) -> User | None:
    """The user GitHub links a commit email to, or None (an email no user owns); creates none but `web-flow`."""
    if email.lower() == GITHUB.email:
        return state.user(WEB_FLOW)
    found = _NOREPLY.match(email)
    if found is None:
        return None
    with state.lock:
        user = next((u for u in state.users.values() if u.login.lower() == found["login"].lower()), None)
    if user is None or (found["id"] is not None and int(found["id"]) != user.id):
        return None
    return user
