"""What plangate, as an OpenID Connect issuer, says about one terraform step (pure): the token's claims and
the discovery document.

A token names one project, one workspace and one phase of one repository, in `sub` (what a cloud's trust
policy matches on) and in claims of their own. The phase is what the step may do: `plan` (a PR's plan, and
the plan a merge makes before the gate has looked at it), `drift` (a scheduled drift check, which plans),
`apply` (only the apply of a plan the gate passed). A cloud role that trusts `phase:apply` is therefore out
of reach of every pull request's code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

PHASES = ("plan", "drift", "apply")
MAX_LIFETIME = 3600  # seconds: a token lives no longer than its step, and never more than an hour
ALGORITHM = "RS256"  # what AWS, Google Cloud and Microsoft Entra all accept from an external issuer
# What a `sub` part may hold unescaped: GitHub's owner/repo characters, project names, workspaces.
_PART = re.compile(r"[^A-Za-z0-9_.\-/]")


def _part(value: str) -> str:
    """A `sub` part: `:` separates parts, so anything outside a plain name becomes `_`."""
    return _PART.sub("_", value)


def subject(repo: str, project: str, workspace: str, phase: str) -> str:
    """`repo:OWNER/REPO:project:NAME:workspace:WS:phase:PHASE`."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}")
    return f"repo:{_part(repo)}:project:{_part(project)}:workspace:{_part(workspace)}:phase:{phase}"


def lifetime(step_timeout: float) -> int:
    """Seconds a step's token lives: the step's own timeout, at most MAX_LIFETIME (a token is valid from a
    few seconds before it was made, `nbf`, for clocks that drift; never after its step could have ended)."""
    return max(1, min(MAX_LIFETIME, math.ceil(step_timeout)))


def claims(
    *,
    issuer: str,
    audience: str,
    repo: str,
    repo_id: int,
    project: str,
    workspace: str,
    phase: str,
    sha: str,
    now: int,
    lifetime_seconds: int,
    token_id: str,
    pr: int | None = None,
    ref: str | None = None,
    approvers: Sequence[str] = (),
) -> dict[str, Any]:
    """The claims of one step's token. `ref`: the branch an apply or drift check runs on; `pr`: the pull
    request a plan is of; `approvers`: for an apply, who approved its destroys."""
    found: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": subject(repo, project, workspace, phase),
        "iat": now,
        "nbf": now - 5,
        "exp": now + min(lifetime_seconds, MAX_LIFETIME),
        "jti": token_id,
        "repository": repo,
        "repository_id": str(repo_id),
        "project": project,
        "workspace": workspace,
        "phase": phase,
        "sha": sha,
    }
    if pr is not None:
        found["pull_request"] = str(pr)
    if ref is not None:
        found["ref"] = ref
    if phase == "apply":
        found["approvers"] = list(approvers)
    return found


def discovery(issuer: str) -> dict[str, Any]:
    """`/.well-known/openid-configuration`: enough for AWS, Google Cloud and Entra to find the keys."""
    return {
        "issuer": issuer,
        "jwks_uri": f"{issuer}/.well-known/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "claims_supported": [
            "iss",
            "aud",
            "sub",
            "iat",
            "nbf",
            "exp",
            "jti",
            "repository",
            "repository_id",
            "project",
            "workspace",
            "phase",
            "sha",
            "pull_request",
            "ref",
            "approvers",
        ],
    }
