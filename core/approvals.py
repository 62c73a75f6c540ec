"""What an `/approve-destroy` covers, recorded and read back (pure: data in, data out).

An approval names exact (project, destroy key) pairs of the plan at one SHA, never "everything":
a destroy that appears later (a new push, a re-plan that found more) is not covered. A project is
named by its identity (name, workspace and dir: core.projects.project_identity), so approving a
staging destroy never covers the same address in another workspace. An approval only covers a plan
that was published before the comment was written (`timing_refusal`). GitHub is the system of
record, so each approval is also written as a hidden marker in the bot's reply comment;
`approvals_from_comments` rebuilds approvals from those markers when Redis has lost them, trusting
only comments the App itself wrote.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.projects import identity_name
from core.render.marker import marker, parse_marker
from core.render.text import code

Pair = tuple[str, str]  # (project identity, destroy key as in core.gate.destroy_key)
Destroys = Mapping[str, Sequence[str]]  # project identity → destroy keys of its plan at one SHA

# The approval marker must leave room in a 65,536-character comment for the visible text.
MAX_MARKER = 50_000
# Addresses are stored as plain JSON when they fit, else zlib-compressed (terraform addresses
# share long prefixes, so thousands of them compress well). Inflating stops here.
_MAX_INFLATED = 16 * 1024 * 1024
MARKER_VERSION = 2  # 2: projects are identities (1 named them by name only, and counts for nothing now)


@dataclass(frozen=True)
class Approval:
    """One person's approval of exact destroy pairs at one SHA; comment_id: the bot reply holding it."""

    approver: str
    sha: str
    pairs: frozenset[Pair]
    comment_id: int | None = None

    def addresses(self) -> dict[str, list[str]]:
        """project → sorted destroy keys, projects sorted."""
        out: dict[str, list[str]] = {}
        for project, key in sorted(self.pairs):
            out.setdefault(project, []).append(key)
        return out


@dataclass(frozen=True)
class Refusal:
    """Nothing to approve; `reason` is the sentence for the reply (after "/approve-destroy: ")."""

    reason: str


@dataclass(frozen=True)
class Coverage:
    """How far the approvals reach into one SHA's destroys."""

    approved_pairs: frozenset[Pair]
    unapproved_pairs: frozenset[Pair]
    approvers: list[str]  # logins whose approvals cover at least one pair, first approval first
    never: frozenset[Pair] = frozenset()  # destroys a `never` destroy rule holds: no approval unlocks them
    notes: Mapping[Pair, str] = field(default_factory=dict)  # per destroy: the rule and what it still needs

    @property
    def total(self) -> int:
        return len(self.approved_pairs) + len(self.unapproved_pairs)

    @property
    def complete(self) -> bool:
        return not self.unapproved_pairs


def _pairs(destroys: Destroys) -> frozenset[Pair]:
    return frozenset((project, key) for project, keys in destroys.items() for key in keys)


def _names(names: Iterable[str]) -> str:
    return ", ".join(code(identity_name(n), 200) for n in dict.fromkeys(identity_name(n) for n in names))


def timing_refusal(
    sha: str, *, named_sha: str | None, comment_at: str | None, published_at: str | None, inclusive: bool = False
) -> Refusal | None:
    """Why an approval written at `comment_at` cannot cover the plan of `sha` published at `published_at`.

    Timestamps are GitHub's own (ISO 8601, UTC, to the second), so no clock of ours is compared with
    GitHub's. A plan published in the same second as the comment, or at an unknown time, counts as
    published after it: the approver may not have seen it. `named_sha` (`/approve-destroy SHA`) must
    be a prefix of `sha`. `inclusive`: `comment_at` is when the page the approver acted on was written
    (a check run's completion): a plan published by then is what they saw.
    """
    if named_sha is not None and not sha.startswith(named_sha):
        return Refusal(
            f"you approved {code(named_sha[:12])}, but the latest plan is of {code(sha[:7])}; "
            "look at that plan and approve it"
        )
    seen = (
        comment_at is not None
        and published_at is not None
        and (published_at <= comment_at if inclusive else published_at < comment_at)
    )
    if not seen:
        return Refusal(
            f"the plan changed after you commented (the plan of {code(sha[:7])} was published at "
            f"{published_at or 'an unknown time'}) — look again and re-approve"
        )
    return None


def approval_for(destroys: Destroys, sha: str, approver: str, projects: Sequence[str] = ()) -> Approval | Refusal:
    """The approval of every destroy at `sha` (or only in `projects`), or why there is nothing to approve.

    `destroys` must hold every project planned at `sha` (by identity), with an empty list for those
    without destroys, so that a name can be told apart from a typo. `projects` are names as people
    write them (or identities): each selects every planned project of that name.
    """
    short = sha[:7]
    wanted = list(dict.fromkeys(projects))
    selected = [p for p in destroys if not wanted or p in wanted or identity_name(p) in wanted]
    unknown = [w for w in wanted if not any(w in (p, identity_name(p)) for p in destroys)]
    if unknown:
        noun = "project" if len(unknown) == 1 else "projects"
        planned = _names(destroys) or "none"
        return Refusal(f"no {noun} named {_names(unknown)} in the latest plan at {short}; planned there: {planned}")
    pairs = frozenset((p, key) for p in selected for key in destroys[p])
    if not pairs:
        if projects and _pairs(destroys):
            with_destroys = [p for p, keys in destroys.items() if keys]
            return Refusal(
                f"the latest plan at {short} has no destroys in {_names(selected)}; "
                f"the destroys are in {_names(with_destroys)}"
            )
        return Refusal(f"the latest plan at {short} has no destroys")
    approval = Approval(approver, sha, pairs)
    if len(approval_marker(approval, reply_to=2**63)) > MAX_MARKER:
        # Fail closed: an approval GitHub cannot hold would be lost with Redis.
        return Refusal(
            f"{len(pairs):,} destroys at {short} are too many to record in one approval comment; "
            "approve them one project at a time: /approve-destroy PROJECT"
        )
    return approval


def approval_marker(approval: Approval, reply_to: int | None = None) -> str:
    """The hidden `plangate:approval` marker: approver, sha, projects and every destroy key per project."""
    addresses = approval.addresses()
    fields: dict[str, Any] = {
        "v": MARKER_VERSION,
        "approver": approval.approver,
        "sha": approval.sha,
        "projects": list(addresses),
        "addresses": addresses,
    }
    if reply_to is not None:
        fields["reply_to"] = reply_to
    plain = marker("approval", **fields)
    if len(plain) <= MAX_MARKER:
        return plain
    packed = json.dumps(addresses, sort_keys=True, ensure_ascii=True).encode()
    fields.pop("addresses")
    fields["addresses_z"] = base64.b64encode(zlib.compress(packed, 9)).decode("ascii")
    return marker("approval", **fields)


def _inflate(text: object) -> object:
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text, validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, _MAX_INFLATED)
        if inflater.unconsumed_tail or not inflater.eof:
            return None
        return json.loads(data)
    except (binascii.Error, zlib.error, ValueError, RecursionError):
        return None


def _address_map(fields: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """addresses (plain or compressed) when well-formed and consistent with `projects`, else None."""
    if ("addresses" in fields) == ("addresses_z" in fields):
        return None
    raw = fields["addresses"] if "addresses" in fields else _inflate(fields["addresses_z"])
    if not isinstance(raw, dict) or not raw:
        return None
    for project, keys in raw.items():
        if not project or not isinstance(keys, list) or not keys:
            return None
        if not all(isinstance(k, str) and k for k in keys):
            return None
    projects = fields.get("projects")
    if not isinstance(projects, list) or sorted(projects) != sorted(raw):
        return None
    return raw


def approval_from_marker(body: object, sha: str) -> Approval | None:
    """The approval in a comment body for `sha`; None when absent, malformed or for another SHA.

    The caller must have checked who wrote the comment (see approvals_from_comments). The marker must
    open the body, as the bot writes it: text the bot echoes later in a comment can never carry one.
    """
    if not isinstance(body, str) or not body.startswith("<!-- plangate:approval "):
        return None
    parsed = parse_marker(body)
    if parsed is None or parsed[0] != "approval":
        return None
    fields = parsed[1]
    approver = fields.get("approver")
    if fields.get("v") != MARKER_VERSION or fields.get("sha") != sha or not sha:
        return None
    if not isinstance(approver, str) or not approver:
        return None
    addresses = _address_map(fields)
    if addresses is None:
        return None
    pairs = frozenset((p, k) for p, keys in addresses.items() for k in keys)
    return Approval(approver, sha, pairs)


def approvals_from_comments(comments: Iterable[Mapping[str, Any]], bot_login: str, sha: str) -> list[Approval]:
    """Approvals for `sha` recorded in the bot's own comments, oldest first; anyone else's markers never count."""
    found: list[Approval] = []
    own = bot_login.casefold()
    for comment in comments:
        user = comment.get("user")
        login = user.get("login") if isinstance(user, Mapping) else None
        if not isinstance(login, str) or login.casefold() != own:
            continue
        approval = approval_from_marker(comment.get("body"), sha)
        if approval is None:
            continue
        comment_id = comment.get("id")
        found.append(
            Approval(approval.approver, sha, approval.pairs, comment_id if isinstance(comment_id, int) else None)
        )
    return found


def coverage(destroys: Destroys, approvals: Iterable[Approval], *, sha: str) -> Coverage:
    """Which destroys at `sha` are approved; approvals for any other SHA count for nothing."""
    planned = _pairs(destroys)
    approved: set[Pair] = set()
    approvers: dict[str, None] = {}
    for approval in approvals:
        if approval.sha != sha:
            continue
        covered = approval.pairs & planned
        if covered:
            approved |= covered
            approvers.setdefault(approval.approver)
    return Coverage(frozenset(approved), planned - approved, list(approvers))


def fully_approved(destroys: Destroys, approvals: Iterable[Approval], *, sha: str) -> bool:
    """Every destroy at `sha` is approved (trivially true when there is none)."""
    return coverage(destroys, approvals, sha=sha).complete


def approved_keys(approvals: Iterable[Approval], project: str, *, sha: str) -> frozenset[str]:
    """The destroy keys of `project` approved at `sha`: the `approved` set for core.gate.decide_apply."""
    return frozenset(key for a in approvals if a.sha == sha for p, key in a.pairs if p == project)


def to_json(approvals: Iterable[Approval]) -> str:
    """The Redis record of a SHA's approvals."""
    return json.dumps(
        [
            {"approver": a.approver, "sha": a.sha, "pairs": sorted(a.pairs), "comment_id": a.comment_id}
            for a in approvals
        ],
        sort_keys=True,
    )


def from_json(text: str | bytes) -> list[Approval]:
    """Read a `to_json` record back; ValueError when it is not one (rebuild from comments then)."""
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("approval record must be a list")
    out = []
    for item in data:
        if not isinstance(item, dict):
            raise ValueError("approval record entries must be objects")
        approver, sha, pairs, comment_id = (item.get(k) for k in ("approver", "sha", "pairs", "comment_id"))
        if not isinstance(approver, str) or not approver or not isinstance(sha, str) or not sha:
            raise ValueError("approval record entry needs approver and sha")
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
        ):
            raise ValueError("approval record pairs must be [project, key] lists")
        if comment_id is not None and (not isinstance(comment_id, int) or isinstance(comment_id, bool)):
            raise ValueError("approval record comment_id must be an integer")
        out.append(Approval(approver, sha, frozenset((p, k) for p, k in pairs), comment_id))
    return out
