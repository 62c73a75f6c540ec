"""GitHub's authentication rules: App JWT for /app routes, installation tokens for everything else."""

from __future__ import annotations

import base64
import json
import time
from typing import NamedTuple

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse

from standin.state import State, Token, UserToken

DOCS = "https://docs.github.com/rest"
SKEW = 5  # seconds of clock drift tolerated on `iat`
MAX_LIFETIME = 600

EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which "
    "the assertion expires"
)
IAT_FUTURE = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
UNDECODABLE = "A JSON web token could not be decoded"
BAD_ISS = "'Issuer' claim ('iss') must be an Integer"


def error(status: int, message: str, docs: str = DOCS, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": docs, "status": str(status)}, status, headers=headers)


def not_found() -> JSONResponse:
    return error(404, "Not Found")


def _credentials(request: Request) -> tuple[str, str] | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if not value.strip():
        return None
    return scheme.lower(), value.strip()


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2 and not value.startswith(("ghs_", "ghp_", "gho_", "ghu_"))


def auth_kind(request: Request) -> str:
    """For the request log: jwt | token | basic | none."""
    creds = _credentials(request)
    if creds is None:
        return "none"
    scheme, value = creds
    if scheme == "basic":
        return "basic"
    return "jwt" if scheme == "bearer" and looks_like_jwt(value) else "token"


def _verify_jwt(state: State, token: str) -> JSONResponse | None:
    try:  # the JWS layer only: pyjwt's claim checks would refuse an integer `iss`, which GitHub accepts
        raw = jwt.api_jws.decode(token, state.app.public_key_pem, algorithms=["RS256"])
        claims = json.loads(raw)
    except (jwt.PyJWTError, ValueError):
        return error(401, UNDECODABLE)
    if not isinstance(claims, dict):
        return error(401, UNDECODABLE)
    now = time.time()
    iat, exp, iss = claims.get("iat"), claims.get("exp"), claims.get("iss")
    if not isinstance(exp, int | float) or exp <= now:
        return error(401, EXPIRED)
    if not isinstance(iat, int | float) or iat > now + SKEW:
        return error(401, IAT_FUTURE)
    if exp - iat > MAX_LIFETIME or exp > now + MAX_LIFETIME + SKEW:
        return error(401, TOO_LONG)
    if str(iss) != str(state.app.id):
        return error(401, BAD_ISS if not str(iss).isdigit() else "Integration not found")
    return None


def require_jwt(state: State, request: Request) -> JSONResponse | None:
    """None when the request carries a valid App JWT, else GitHub's error answer."""
    creds = _credentials(request)
    if creds is None:
        return error(401, "Requires authentication")
    scheme, value = creds
    if scheme != "bearer" or not looks_like_jwt(value):
        return error(401, UNDECODABLE)
    return _verify_jwt(state, value)


def require_token(state: State, request: Request) -> Token | JSONResponse:
    """The installation token's record, or GitHub's error answer (an App JWT here is a 403)."""
    creds = _credentials(request)
    if creds is None:
        return error(401, "Requires authentication")
    scheme, value = creds
    if scheme == "bearer" and looks_like_jwt(value):
        problem = _verify_jwt(state, value)
        return problem or error(403, "Resource not accessible by integration")
    if scheme not in ("token", "bearer"):
        return error(401, "Bad credentials")
    record = state.valid_token(value)
    return record if record is not None else error(401, "Bad credentials")


def require_user(state: State, request: Request) -> UserToken | JSONResponse:
    """A `ghu_` user access token's record, or GitHub's answer: an App JWT or installation token is a 403 here."""
    creds = _credentials(request)
    if creds is None:
        return error(401, "Requires authentication")
    scheme, value = creds
    if scheme not in ("token", "bearer"):
        return error(401, "Bad credentials")
    if (scheme == "bearer" and looks_like_jwt(value) and _verify_jwt(state, value) is None) or state.valid_token(value):
        return error(403, "Resource not accessible by integration")
    record = state.valid_user_token(value)
    return record if record is not None else error(401, "Bad credentials")


def basic_token(state: State, request: Request) -> Token | None:
    """git over HTTP: `Basic base64(x-access-token:<token>)`, GitHub's scheme for App tokens."""
    creds = _credentials(request)
    if creds is None or creds[0] != "basic":
        return None
    try:
        user, _, password = base64.b64decode(creds[1]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    if user != "x-access-token":
        return None
    return state.valid_token(password)


class Caller(NamedTuple):
    """Whom GitHub's rate limits charge for a request."""

    kind: str  # "installation" | "app" | "user" | "ip"
    ident: str  # installation id, App id, user id, or the client's address


def caller(state: State, request: Request) -> Caller:
    """The installation of a valid token, the App of a valid JWT, the user of a user token, else the client address."""
    creds = _credentials(request)
    if creds is not None and creds[0] in ("token", "bearer"):
        value = creds[1]
        if looks_like_jwt(value):
            if creds[0] == "bearer" and _verify_jwt(state, value) is None:
                return Caller("app", str(state.app.id))
        elif (token := state.valid_token(value)) is not None:
            return Caller("installation", str(token.installation_id))
        elif (user := state.valid_user_token(value)) is not None:
            return Caller("user", str(state.user(user.login).id))
    return Caller("ip", request.client.host if request.client else "unknown")
