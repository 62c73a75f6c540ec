"""What an `/approve-destroy` covers, recorded and read back (pure: data in, data out).

An approval names exact gated changes of the plan at one SHA, never "everything": each one by
(project identity, key) *and* the object it saw (core.gated), so a change that appears later (a new
push, a re-plan that found more) or the same address meaning another object is not covered. A
project is named by its identity (name, workspace and dir: core.projects.project_identity), so
approving a staging destroy never covers the same address in another workspace. An approval only
covers a plan that was published before the comment was written (`timing_refusal`).

GitHub is the system of record, so each approval is also written as a hidden marker in the bot's
reply comment. Anyone with write access can edit the bot's comments, so the marker is sealed
(core.render.marker.sealed_marker): a MAC over the repository, the PR or issue, the SHA, the plan's
digest, the approver, every approved change with its object, and the comment it answers, keyed by a
secret only the workers hold. core.approval_markers reads them back, and only from markers that
verify: no verifying marker means no approval.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.gated import Gates
from core.projects import identity_name
from core.render.marker import sealed_marker
from core.render.text import code

Pair = tuple[str, str]  # (project identity, gated key as in core.gated)
Seen = tuple[str, str, str]  # (project identity, gated key, the object the approver saw: its first OBJECT_LEN)

# An approval keeps all 128 bits of each object's digest. Fewer would let a writer who shapes two
# objects' attributes (through ungated updates) find a pair that collide, then move one onto the
# other's address. The marker then holds about 1,000 destroys; more are approved project by project.
OBJECT_LEN = 32

# The approval marker must leave room in a 65,536-character comment for the visible text.
MAX_MARKER = 50_000
_SEAL = 65  # " " and a 64-hex MAC
# Changes are stored as plain JSON when they fit, else zlib-compressed (terraform addresses share long
# prefixes, so thousands of them compress well).
MARKER_VERSION = 3  # 3: sealed, each change with its object (1 and 2 were unsealed and count for nothing)


@dataclass(frozen=True)
class Approval:
    """One person's approval of exact gated changes at one SHA; `plan`: the digest of the published plan
    it was given on; comment_id: the bot reply holding it."""

    approver: str
    sha: str
    seen: frozenset[Seen]
    plan: str = ""
    comment_id: int | None = None

    @property
    def pairs(self) -> frozenset[Pair]:
        return frozenset((project, key) for project, key, _ in self.seen)

    def addresses(self) -> dict[str, list[str]]:
        """project → sorted keys, projects sorted."""
        out: dict[str, list[str]] = {}
        for project, key, _ in sorted(self.seen):
            out.setdefault(project, []).append(key)
        return out

    def objects(self) -> dict[str, dict[str, str]]:
        """project → key → object, sorted: what the marker records."""
        out: dict[str, dict[str, str]] = {}
        for project, key, obj in sorted(self.seen):
            out.setdefault(project, {})[key] = obj
        return out

    def bound(self, gates: Gates) -> Approval:
        """This approval as far as it covers the plan `gates`: the changes it saw with the same object."""
        kept = frozenset(s for s in self.seen if _object_of(gates, s[0], s[1]) == s[2])
        return self if kept == self.seen else replace(self, seen=kept)


def _object_of(gates: Gates, project: str, key: str) -> str | None:
    gated = gates.get(project, {}).get(key)
    return gated.object[:OBJECT_LEN] if gated is not None else None


def voided(approvals: Iterable[Approval], gates: Gates) -> frozenset[Pair]:
    """Changes an approval named that the plan `gates` still has, but on another object (or other code):
    the approval given for the old one does not cover them."""
    out = set()
    for approval in approvals:
        for project, key, obj in approval.seen:
            now = _object_of(gates, project, key)
            if now is not None and now != obj:
                out.add((project, key))
    return frozenset(out)


@dataclass(frozen=True)
class Refusal:
    """Nothing to approve; `reason` is the sentence for the reply (after "/approve-destroy: ")."""

    reason: str


@dataclass(frozen=True)
class Coverage:
    """How far the approvals reach into one SHA's gated changes."""

    approved_pairs: frozenset[Pair]
    unapproved_pairs: frozenset[Pair]
    approvers: list[str]  # logins whose approvals cover at least one pair, first approval first
    never: frozenset[Pair] = frozenset()  # destroys a `never` destroy rule holds: no approval unlocks them
    notes: Mapping[Pair, str] = field(default_factory=dict)  # per destroy: the rule and what it still needs
    voided: frozenset[Pair] = frozenset()  # approved once, but the object (or code) changed since
    # per change: who approved it (for the object it has now), first approval first; an approval counts
    # toward a rule only where `notes` says so (a narrowed rule may not count someone listed here)
    approved_by: Mapping[Pair, tuple[str, ...]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.approved_pairs) + len(self.unapproved_pairs)

    @property
    def complete(self) -> bool:
        return not self.unapproved_pairs


def _pairs(gates: Gates) -> frozenset[Pair]:
    return frozenset((project, key) for project, keys in gates.items() for key in keys)


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


def approval_for(
    gates: Gates, sha: str, approver: str, projects: Sequence[str] = (), *, plan: str = ""
) -> Approval | Refusal:
    """The approval of every gated change at `sha` (or only in `projects`), or why there is nothing to approve.

    `gates` must hold every project planned at `sha` (by identity), with nothing for those without
    gated changes, so that a name can be told apart from a typo. `projects` are names as people write
    them (or identities): each selects every planned project of that name. `plan`: the published plan's
    digest (core.gated.published_digest).
    """
    short = sha[:7]
    wanted = list(dict.fromkeys(projects))
    selected = [p for p in gates if not wanted or p in wanted or identity_name(p) in wanted]
    unknown = [w for w in wanted if not any(w in (p, identity_name(p)) for p in gates)]
    if unknown:
        noun = "project" if len(unknown) == 1 else "projects"
        planned = _names(gates) or "none"
        return Refusal(f"no {noun} named {_names(unknown)} in the latest plan at {short}; planned there: {planned}")
    seen = frozenset((p, key, g.object[:OBJECT_LEN]) for p in selected for key, g in gates[p].items())
    if not seen:
        if projects and _pairs(gates):
            with_destroys = [p for p, keys in gates.items() if keys]
            return Refusal(
                f"the latest plan at {short} has no destroys in {_names(selected)}; "
                f"the destroys are in {_names(with_destroys)}"
            )
        return Refusal(f"the latest plan at {short} has no destroys")
    approval = Approval(approver, sha, seen, plan)
    if len(marker_text(_fields(approval, reply_to=2**63))) + _SEAL > MAX_MARKER:
        # Fail closed: an approval GitHub cannot hold would be lost with Redis.
        return Refusal(
            f"{len(seen):,} destroys at {short} are too many to record in one approval comment; "
            "approve them one project at a time: /approve-destroy PROJECT"
        )
    return approval


def context(repo_id: int, number: int) -> str:
    """Where an approval marker belongs: it verifies on this repository's PR or issue only."""
    return f"approval/{repo_id}/{number}"


def _fields(approval: Approval, reply_to: int | None) -> dict[str, Any]:
    objects = approval.objects()
    fields: dict[str, Any] = {
        "v": MARKER_VERSION,
        "approver": approval.approver,
        "sha": approval.sha,
        "plan": approval.plan,
        "changes": objects,
        "reply_to": reply_to,
    }
    if len(marker_text(fields)) + _SEAL <= MAX_MARKER:
        return fields
    packed = json.dumps(objects, sort_keys=True, ensure_ascii=True).encode()
    fields.pop("changes")
    fields["changes_z"] = base64.b64encode(zlib.compress(packed, 9)).decode("ascii")
    return fields


def marker_text(fields: Mapping[str, Any]) -> str:
    """The unsealed marker of `fields` (its length decides whether the changes are compressed)."""
    return json.dumps(dict(fields), sort_keys=True, ensure_ascii=True)


def approval_marker(approval: Approval, *, key: bytes, repo_id: int, number: int, reply_to: int | None) -> str:
    """The sealed `plangate:approval` marker: approver, SHA, plan digest, every change with its object,
    and the command it answers, bound to this repository's PR or issue `number`."""
    return sealed_marker("approval", key, context(repo_id, number), **_fields(approval, reply_to))


def to_json(approvals: Iterable[Approval]) -> str:
    """The Redis record of a SHA's approvals (sealed by the store)."""
    return json.dumps(
        [
            {"approver": a.approver, "sha": a.sha, "seen": sorted(a.seen), "plan": a.plan, "comment_id": a.comment_id}
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
        approver, sha, seen, plan, comment_id = (item.get(k) for k in ("approver", "sha", "seen", "plan", "comment_id"))
        if not isinstance(approver, str) or not approver or not isinstance(sha, str) or not sha:
            raise ValueError("approval record entry needs approver and sha")
        if not isinstance(plan, str):
            raise ValueError("approval record entry needs the plan's digest")
        if not isinstance(seen, list) or not all(
            isinstance(s, list) and len(s) == 3 and all(isinstance(x, str) for x in s) for s in seen
        ):
            raise ValueError("approval record changes must be [project, key, object] lists")
        if comment_id is not None and (not isinstance(comment_id, int) or isinstance(comment_id, bool)):
            raise ValueError("approval record comment_id must be an integer")
        out.append(Approval(approver, sha, frozenset((p, k, o) for p, k, o in seen), plan, comment_id))
    return out
