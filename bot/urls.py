"""Where plangate and GitHub are, as a browser sees them: shared by the setup flow and GitHub sign-in."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from starlette.requests import Request

_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")


def public_url_setting() -> str | None:
    """PLANGATE_PUBLIC_URL: plangate's external URL; when set, request headers are not consulted."""
    return (os.environ.get("PLANGATE_PUBLIC_URL") or "").rstrip("/") or None


def github_web_url(api_url: str) -> str:
    """The web host for an API URL: api.github.com → github.com, https://HOST/api/v3 → https://HOST."""
    parts = urlsplit(api_url)
    host, path = parts.netloc, parts.path.rstrip("/")
    if path.endswith("/api/v3"):
        path = path.removesuffix("/api/v3")
    elif host.startswith("api."):
        host = host.removeprefix("api.")
    return urlunsplit((parts.scheme, host, path, "", ""))


def public_base_url(request: Request) -> str:
    """PLANGATE_PUBLIC_URL, else the URL the page was opened on, with X-Forwarded-Proto/-Host applied.

    Forwarded headers are honoured without a trust setting: they shape only the answer to the request
    that carries them (a page the operator reads before clicking, sent with Cache-Control: no-store),
    exactly like the Host header does, and a TLS-terminating proxy in front is the normal deployment.
    A forged host in a sign-in redirect_uri only sends that request's own browser to a URL GitHub refuses:
    GitHub accepts nothing but the App's registered callback URLs."""
    configured = public_url_setting()
    if configured:
        return configured
    proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    host = request.headers.get("x-forwarded-host", "").split(",")[0].strip()
    scheme = proto if proto in ("http", "https") else request.url.scheme
    netloc = host if _HOST.fullmatch(host) else request.url.netloc
    return f"{scheme}://{netloc}{request.scope.get('root_path', '')}".rstrip("/")


def cookie_path(base_url: str, below: str = "") -> str:
    """The path a cookie is scoped to: plangate's own prefix (a root_path behind a proxy), then `below`."""
    return f"{urlsplit(base_url).path}{below}" or "/"
