"""The setup flow's server-rendered pages; every interpolated value goes through `html.escape`."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the callback URL carries the code and the state
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
}
_STYLE = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · plangate</title>'
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>"
    )
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
    table = "".join(f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>" for k, v in rows)
    warning = ""
    if urlsplit(str(hook)).scheme != "https":
        warning = (
            "<p><strong>The webhook URL is not https.</strong> If plangate sits behind a proxy, make it send "
            "X-Forwarded-Proto and X-Forwarded-Host, or set PLANGATE_PUBLIC_URL.</p>"
        )
    body = (
        f"<p>plangate has no GitHub App yet. The button asks {escape(web_url)} to create one for "
        f"{escape(account)}; GitHub shows the settings before anything is created.</p>"
        f"<table>{table}</table>{warning}"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="manifest" value="{escape(json.dumps(manifest))}">'
        '<button type="submit">Create GitHub App</button></form>'
        "<p>For an organization, open <code>/setup?org=NAME</code>.</p>"
        "<p>The App's id, private key, webhook secret and OAuth client (for signing in to the status page) will "
        f"be written to <code>{escape(str(env_file))}</code> (mode 0600).</p>"
    )
    return _page("Set up plangate", body)


def done(app_url: str, env_file: Path, *, has_secret: bool) -> HTMLResponse:
    install = f"{app_url}/installations/new"
    secret_note = (
        ""
        if has_secret
        else "<p><strong>GitHub returned no webhook secret.</strong> Set one in the App's settings and add "
        "<code>GITHUB_WEBHOOK_SECRET=…</code> to the file; plangate refuses webhooks without it.</p>"
    )
    body = (
        f'<p>The App <a href="{escape(app_url)}">{escape(app_url)}</a> exists; its id, private key, webhook '
        f"secret and OAuth client are in <code>{escape(str(env_file))}</code> (mode 0600). The OAuth client "
        "lets people sign in to the status page with GitHub; they see only the repositories they can read."
        f"</p>{secret_note}"
        "<ol><li>Restart plangate (web, worker and cron) with that file in its environment, e.g. "
        "<code>env_file: .env</code> in compose, or <code>set -a; . ./.env; set +a</code>.</li>"
        f'<li><a href="{escape(install)}">Install the App</a> on the repositories plangate should guard.</li></ol>'
        "<p>This page is not served again: setup closes once the App is configured.</p>"
    )
    return _page("GitHub App created", body)


def already_created(env_file: Path) -> HTMLResponse:
    body = (
        f"<p><code>{escape(str(env_file))}</code> already holds <code>GITHUB_APP_ID</code>. Restart plangate with "
        "that file in its environment. To create a different App, remove the App settings from it first.</p>"
    )
    return _page("A GitHub App is already set up", body, 409)


def orphaned(app_url: str, reason: str, status: int) -> HTMLResponse:
    body = (
        f'<p>GitHub created the App <a href="{escape(app_url)}">{escape(app_url)}</a>, but its credentials were '
        f"not stored: {escape(reason)}</p><p>GitHub hands the private key out only once. Delete that App in its "
        "settings (Advanced → Delete), fix the problem, and open /setup again.</p>"
    )
    return _page("The App's credentials were not stored", body, status)


def error(status: int, reason: str) -> HTMLResponse:
    body = f"<p>{escape(reason)}</p><p>Nothing was written.</p>"
    return _page("Setup failed", body, status)
