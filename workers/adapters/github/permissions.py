"""Who may approve destroys and who may re-plan, asked of GitHub at the moment of the command.

Fails closed: any error while asking (network, 5xx, 403, rate limit, an answer of the wrong
shape) refuses with COULD_NOT_VERIFY, never allows. A 404 from the permission endpoint means
"not a collaborator" and refuses too. Bots never approve and never plan.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import quote

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core.config import DestroyApprovers, Rule
from workers.adapters.github.authors import Authors

log = logging.getLogger("plangate.permissions")

# GitHub's repository roles, weakest first. `role_name` may also be a custom role, which is ranked
# by its base role as the legacy `permission` field reports it.
RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
COULD_NOT_VERIFY = "could not verify your permission, try again"


@dataclass(frozen=True)
class Permission:
    """The answer, with the sentence that explains it in a reply."""

    allowed: bool
    reason: str


def is_bot(login: str, user_type: str) -> bool:
    """A GitHub App or machine account: type "Bot", or an App's `name[bot]` login."""
    return user_type.casefold() == "bot" or login.casefold().endswith("[bot]")


def _path(text: str) -> str:
    return quote(text, safe="")


async def repo_role(gh: GitHubAPI, repo: str, login: str) -> str | None:
    """The user's role on `repo` (a RANK key), or None when GitHub says 404 (not a collaborator).

    Any other error propagates: the callers turn it into a refusal.
    """
    try:
        data = await gh.getitem(f"/repos/{repo}/collaborators/{_path(login)}/permission")
    except BadRequest as exc:
        if exc.status_code == HTTPStatus.NOT_FOUND:
            return None
        raise
    if not isinstance(data, dict):
        raise ValueError("the permission answer is not an object")
    role, legacy = data.get("role_name"), data.get("permission")
    if isinstance(role, str) and role in RANK:
        return role
    if isinstance(legacy, str) and legacy in RANK:
        return legacy
    raise ValueError("the permission answer names no known role")


async def team_member(gh: GitHubAPI, team: str, login: str) -> bool:
    """Active member of "org/slug" (a pending invitation is not membership); 404 means no."""
    org, _, slug = team.partition("/")
    try:
        data = await gh.getitem(f"/orgs/{_path(org)}/teams/{_path(slug)}/memberships/{_path(login)}")
    except BadRequest as exc:
        if exc.status_code == HTTPStatus.NOT_FOUND:
            return False
        raise
    return isinstance(data, dict) and data.get("state") == "active"


def _could_not_verify(repo: str, login: str, exc: Exception) -> Permission:
    status = getattr(getattr(exc, "status_code", None), "value", None)
    log.warning(json.dumps({"repo": repo, "login": login, "error": type(exc).__name__, "status": status}))
    return Permission(False, COULD_NOT_VERIFY)


def _role_text(role: str | None, repo: str, login: str) -> str:
    if role is None:
        return f"@{login} is not a collaborator on {repo}"
    return f"@{login} has {role} permission on {repo}"


async def may_approve(
    gh: GitHubAPI,
    *,
    repo: str,
    login: str,
    user_type: str,
    authors: Authors,
    policy: DestroyApprovers,
) -> Permission:
    """May `login` approve destroys on `repo`? `authors`: who made the change (workers.adapters.github.authors):
    none of them, unless self-approval is allowed; and when that list cannot be proven complete, nobody."""
    if is_bot(login, user_type):
        return Permission(False, f"@{login} is a bot; bots never approve destroys")
    if not policy.allow_self_approval:
        did = authors.role(login)
        if did is not None:
            return Permission(
                False,
                f"@{login} {did}; destroys need someone else's approval here "
                f"(destroy_approvers.allow_self_approval is false). Authors of this change: {authors.describe()}",
            )
        if authors.unproven:
            return Permission(False, f"{authors.unproven}, so @{login} cannot be cleared of authoring it")
    if login.casefold() in {u.casefold() for u in policy.users}:
        return Permission(True, f"@{login} is listed in destroy_approvers.users")
    needed = RANK.get(policy.permission, RANK["admin"])  # an unknown level fails closed
    try:
        role = await repo_role(gh, repo, login)
        if role is not None and RANK[role] >= needed:
            return Permission(True, _role_text(role, repo, login))
        for team in policy.teams:
            if await team_member(gh, team, login):
                return Permission(True, f"@{login} is a member of team {team}")
    except Exception as exc:  # fail closed on anything unexpected
        return _could_not_verify(repo, login, exc)
    teams = f", or membership in team {', '.join(policy.teams)}" if policy.teams else ""
    return Permission(
        False, f"{_role_text(role, repo, login)}; approving destroys needs {policy.permission} or higher{teams}"
    )


async def may_plan(gh: GitHubAPI, repo: str, login: str, user_type: str) -> Permission:
    """May `login` run /plan? Write permission or more, and not a bot."""
    if is_bot(login, user_type):
        return Permission(False, f"@{login} is a bot; bots cannot run /plan")
    try:
        role = await repo_role(gh, repo, login)
    except Exception as exc:  # fail closed on anything unexpected
        return _could_not_verify(repo, login, exc)
    if role is not None and RANK[role] >= RANK["write"]:
        return Permission(True, _role_text(role, repo, login))
    return Permission(False, f"{_role_text(role, repo, login)}; /plan needs write or higher")


async def rule_eligibility(gh: GitHubAPI, logins: Iterable[str], rules: Sequence[Rule]) -> dict[str, frozenset[int]]:
    """login → the narrowed rules (by index in RepoConfig.rules) the person counts for: listed in the
    rule's users, or a member of one of its teams. An API error counts as not a member (fail closed)."""
    out: dict[str, frozenset[int]] = {}
    for login in dict.fromkeys(logins):
        ok: set[int] = set()
        for index, rule in enumerate(rules):
            if not rule.narrowed:
                continue
            if login.casefold() in {u.casefold() for u in rule.users}:
                ok.add(index)
                continue
            for team in rule.teams:
                try:
                    if await team_member(gh, team, login):
                        ok.add(index)
                        break
                except Exception:
                    continue
        out[login] = frozenset(ok)
    return out
