"""plangate's OpenID Connect issuer: the discovery document and the key set clouds verify its tokens with.

Public by design (AWS, Google Cloud and Entra fetch them without credentials), and they hold nothing
secret: the issuer URL and public keys. 404 when plangate issues no tokens (PLANGATE_OIDC_KEY_DIR unset).
The key set is read from the key directory on each request (a few small files), so a rotation shows at
once; clouds cache it for `max-age`.
"""

from __future__ import annotations

import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from core.oidc import discovery
from plumbing.oidc_keys import KeyRing, jwks
from plumbing.settings import Settings

CACHE = "public, max-age=300"


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def openid_configuration(request: Request) -> Response:
    oidc = _settings(request).oidc
    if oidc is None:
        return PlainTextResponse("plangate issues no OIDC tokens here", status_code=404)
    return JSONResponse(discovery(oidc.issuer), headers={"Cache-Control": CACHE})


async def key_set(request: Request) -> Response:
    oidc = _settings(request).oidc
    if oidc is None:
        return PlainTextResponse("plangate issues no OIDC tokens here", status_code=404)
    ring = KeyRing(oidc.key_dir)
    body = await run_in_threadpool(lambda: jwks(ring.published(time.time())))
    return JSONResponse(body, headers={"Cache-Control": CACHE})


routes = [
    Route("/.well-known/openid-configuration", openid_configuration),
    Route("/.well-known/jwks", key_set),
]
