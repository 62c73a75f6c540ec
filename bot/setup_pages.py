"""The setup flow's server-rendered pages, from autoescaping templates in bot/templates/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

_TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the callback URL carries the code and the state
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
}
_STYLE = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"


def _page(name: str, status: int = 200, **values: object) -> HTMLResponse:
    document = _TEMPLATES.get_template(name).render(style=_STYLE, **values)
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def create(*, action: str, manifest: dict[str, Any], account: str, web_url: str, env_file: Path) -> HTMLResponse:
    """The "Create GitHub App" button and what it will ask GitHub for."""
    hook = manifest.get("hook_attributes", {}).get("url", "")
    rows = [
        ("App name (editable on GitHub)", str(manifest.get("name", ""))),
        ("Webhook URL", str(hook)),
        ("Redirect URL", str(manifest.get("redirect_url", ""))),
        ("Sign-in callback URL", ", ".join(map(str, manifest.get("callback_urls", [])))),
        ("Permissions", ", ".join(f"{k}: {v}" for k, v in manifest.get("default_permissions", {}).items())),
        ("Events", ", ".join(manifest.get("default_events", []))),
    ]
    return _page(
        "setup_create.html",
        action=action,
        manifest=json.dumps(manifest),
        account=account,
        web_url=web_url,
        env_file=str(env_file),
        rows=rows,
        webhook_is_https=urlsplit(str(hook)).scheme == "https",
    )


def done(app_url: str, env_file: Path, *, has_secret: bool) -> HTMLResponse:
    return _page(
        "setup_done.html",
        app_url=app_url,
        install_url=f"{app_url}/installations/new",
        env_file=str(env_file),
        has_secret=has_secret,
    )


def already_created(env_file: Path) -> HTMLResponse:
    return _page("setup_already_created.html", 409, env_file=str(env_file))


def orphaned(app_url: str, reason: str, status: int) -> HTMLResponse:
    return _page("setup_orphaned.html", status, app_url=app_url, reason=reason)


def code_needed(*, wrong: bool) -> HTMLResponse:
    """403 until the setup code from the log is entered; `wrong` when one was entered and is not it."""
    return _page("setup_code.html", 403, wrong=wrong)


def error(status: int, reason: str) -> HTMLResponse:
    return _page("setup_error.html", status, reason=reason)
