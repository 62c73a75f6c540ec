"""How many projects one change may plan or apply (pure): the server's PLANGATE_MAX_PROJECTS, which the
default branch's `max_projects` may lower, never raise.

Each project of a change is an init and a plan (and, merged, an apply) on the workers every repository
shares: one PR affecting 10,000 projects kept two workers busy for ~31 minutes while all else waited.
Past the limit the whole change is refused, with a report that names the count and the limit: nothing
of it is planned, so nothing of it can be applied in part.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import RepoConfig

DEFAULT_MAX_PROJECTS = 500


@dataclass(frozen=True)
class TooMany:
    """A change affecting `count` projects, past `limit`; `by`: what set the limit, for people."""

    count: int
    limit: int
    by: str

    @property
    def status(self) -> str:
        """The failing status description (well under GitHub's 140 characters)."""
        return f"{self.count:,} projects affected; the limit is {self.limit:,}"


def over_limit(count: int, server: int, policy: RepoConfig) -> TooMany | None:
    """TooMany when `count` projects is past the limit `policy` (the default branch's config) and the
    server's setting make; None when it is within."""
    if policy.max_projects is not None and policy.max_projects < server:
        limit, by = policy.max_projects, "`max_projects` in `.plangate.yml` on the default branch"
    else:
        limit, by = server, "this plangate's `PLANGATE_MAX_PROJECTS`"
    return TooMany(count, limit, by) if count > limit else None
