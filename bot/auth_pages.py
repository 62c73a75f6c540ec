"""The sign-in flow's own small pages, rendered from autoescaping templates in bot/templates/."""

from __future__ import annotations

from pathlib import Path

from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

_TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the callback URL carries the code and the state
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def _page(name: str, status: int, **values: object) -> HTMLResponse:
    """No style: this CSP allows none, so the template is rendered without one."""
    document = _TEMPLATES.get_template(name).render(**values)
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def refused(status: int, reason: str, status_url: str) -> HTMLResponse:
    """Sign-in did not complete: why, and the way to start again."""
    return _page("signin_refused.html", status, reason=reason, status_url=status_url)


def signed_out(status_url: str) -> HTMLResponse:
    """Not a redirect to the status page: that would sign the person straight back in through GitHub."""
    return _page("signed_out.html", 200, status_url=status_url)
