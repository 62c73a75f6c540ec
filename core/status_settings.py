"""Who may read `GET /` and `GET /metrics`: the settings plumbing.settings parses into one `StatusAuth`.

Closed unless one of them opens it: a shared token, "Sign in with GitHub" (the App's OAuth client), or
the explicit `PLANGATE_STATUS_PUBLIC=true`. The page names private repositories, PRs, approvers and SHAs,
and the webhook URL it shares a host with must face the internet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatusAuth:
    public: bool = False  # PLANGATE_STATUS_PUBLIC: both routes open to anyone
    token: str | None = None  # PLANGATE_STATUS_TOKEN(_PATH): never logged
    client_id: str | None = None  # GITHUB_CLIENT_ID: the App's OAuth client
    client_secret: str | None = None  # GITHUB_CLIENT_SECRET(_PATH): never logged

    @property
    def sign_in(self) -> bool:
        """True when "Sign in with GitHub" is offered: both halves of the App's OAuth client are set."""
        return self.client_id is not None and self.client_secret is not None

    def __repr__(self) -> str:
        token = "set" if self.token else None
        return f"StatusAuth(public={self.public}, token={token}, client_id={self.client_id!r})"


CLOSED = StatusAuth()  # the default: nothing opens either route
