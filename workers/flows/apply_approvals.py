"""The approvals a merge-time apply may rely on: sealed by the App, for this project's identity, at the
merged PR's last head (or on the held apply itself), for the very objects (and code) the merge-time
plan condemns, and by people who qualify *now*.

Write access can be taken away between an approval and the merge, and a change can gain authors (a
push onto the PR). Every approver the decision would rely on is checked again against the default
branch's policy (permission, users, teams, and never an author of the change); one who no longer
qualifies, or whom GitHub cannot confirm, counts for nothing and is named in the blocked comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from core.approvals import Approval, Coverage, voided
from core.config import DestroyApprovers, Rule
from core.destroy_rules import explain, needs, satisfied_pairs
from core.gated import Gated
from plumbing.records import Records
from workers.adapters.github import GitHub
from workers.adapters.github.authors import Authors
from workers.adapters.github.permissions import may_approve, rule_eligibility
from workers.adapters.store import gates as gate_store


@dataclass(frozen=True)
class Standing:
    """What the approvals amount to for one project at apply time."""

    keys: frozenset[str]  # gated keys approved, for the same objects, by people who still qualify
    approvers: tuple[str, ...]  # those people, first approval first
    revoked: tuple[tuple[str, str], ...] = ()  # (login, why they no longer count)
    voided: tuple[str, ...] = ()  # keys approved for another object (or other code) than this plan's
    authors: str = ""  # who made the change, and why each counts (none of them may approve it)
    approved_by: dict[str, tuple[str, ...]] = field(default_factory=dict)  # key → who approved it (still qualifying)
    notes: dict[str, str] = field(default_factory=dict)  # key → the rules that match it and what they still need
    never: frozenset[str] = frozenset()  # keys a `never` rule holds

    def coverage(self, identity: str, gates: Mapping[str, Gated]) -> Coverage:
        """This standing as the coverage of project `identity`'s gated changes (core.run_gate reads it)."""
        pair = {key: (identity, key) for key in gates}
        return Coverage(
            approved_pairs=frozenset(pair[k] for k in gates if k in self.keys),
            unapproved_pairs=frozenset(pair[k] for k in gates if k not in self.keys),
            approvers=list(self.approvers),
            never=frozenset(pair[k] for k in gates if k in self.never),
            notes={pair[k]: note for k, note in self.notes.items() if k in pair},
            voided=frozenset(pair[k] for k in self.voided if k in pair),
            approved_by={pair[k]: who for k, who in self.approved_by.items() if k in pair},
        )


async def standing(
    records: Records,
    gh: GitHub,
    *,
    repo: str,
    repo_id: int,
    number: int | None,
    shas: tuple[str, ...],
    identity: str,
    gates: Mapping[str, Gated],
    bot_login: str,
    authors: Authors,
    policy: DestroyApprovers | None,
    rules: tuple[Rule, ...] = (),
) -> Standing:
    """`gates`: the project's gated changes in the plan about to be applied (core.gated.plan_gates).
    `policy` None: the default branch's config is unreadable, so no approver can be confirmed.
    `rules`: the default branch's rules (RepoConfig.rules); a key is approved only when they are satisfied."""
    if number is None:
        barred = authors.describe() if policy is None or not policy.allow_self_approval else ""
        return Standing(frozenset(), (), authors=barred)
    found: list[Approval] = []
    for sha in dict.fromkeys(shas):
        approvals = await gate_store.load_approvals(
            records, gh, repo=repo, repo_id=repo_id, number=number, sha=sha, bot_login=bot_login
        )
        found += [a for a in approvals if any(p == identity for p, _ in a.pairs)]
    planned = {identity: gates}
    bound = [a.bound(planned) for a in found]
    verdicts: dict[str, str | None] = {}
    for login in dict.fromkeys(a.approver for a in bound if a.seen):
        if policy is None:
            verdicts[login] = "the default branch's .plangate.yml cannot be read, so no approver can be confirmed"
            continue
        allowed = await may_approve(gh, repo=repo, login=login, user_type="User", authors=authors, policy=policy)
        verdicts[login] = None if allowed.allowed else allowed.reason
    good = [a for a in bound if a.seen and verdicts[a.approver] is None and a.sha in shas]
    eligible = await rule_eligibility(gh, [a.approver for a in good], rules) if rules else {}
    found_needs = needs(planned, good, rules, eligible)
    keys = frozenset(key for _, key in satisfied_pairs(found_needs))
    by_key: dict[str, dict[str, str]] = {}
    for approval in good:
        for _, key in approval.pairs:
            by_key.setdefault(key, {}).setdefault(approval.approver.casefold(), approval.approver)
    revoked = tuple((login, why) for login, why in verdicts.items() if why is not None)
    lost = tuple(sorted(key for _, key in voided(found, planned) if key not in keys))
    barred = authors.describe() if policy is None or not policy.allow_self_approval else ""
    return Standing(
        keys,
        tuple(dict.fromkeys(a.approver for a in good)),
        revoked,
        lost,
        barred,
        approved_by={key: tuple(people.values()) for key, people in sorted(by_key.items())},
        notes={n.pair[1]: explain(n, rules) for n in found_needs if n.rules},
        never=frozenset(n.pair[1] for n in found_needs if n.never),
    )
