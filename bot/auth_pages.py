"""The sign-in flow's own small pages; every interpolated value goes through `html.escape`."""

from __future__ import annotations

from html import escape

from starlette.responses import HTMLResponse

_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the callback URL carries the code and the state
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def _page(title: str, body: str, status: int) -> HTMLResponse:
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · plangate</title>'
        f"</head><body><h1>{escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def refused(status: int, reason: str, status_url: str) -> HTMLResponse:
    """Sign-in did not complete: why, and the way to start again."""
    body = f'<p>{escape(reason)}</p><p><a href="{escape(status_url)}">Sign in again</a></p>'
    return _page("Sign-in failed", body, status)


def signed_out(status_url: str) -> HTMLResponse:
    """Not a redirect to the status page: that would sign the person straight back in through GitHub."""
    body = f'<p>You are signed out of plangate.</p><p><a href="{escape(status_url)}">Sign in again</a></p>'
    return _page("Signed out", body, 200)
