"""PLANGATE_OIDC_*: plangate as an OpenID Connect issuer for terraform's cloud credentials.

On when PLANGATE_OIDC_KEY_DIR names the directory of its signing keys (plumbing.oidc_keys), shared by the
web process and the workers and never shown to a sandbox. The issuer is PLANGATE_OIDC_ISSUER, else
PLANGATE_PUBLIC_URL: the https URL the clouds fetch `/.well-known/openid-configuration` from (plain http
only on a loopback host, for tests). PLANGATE_OIDC_CREDENTIALS (JSON: the shape of a project's
`credentials` in `.plangate.yml`) is what a project without `credentials` of its own gets.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import msgspec

from core.config_credentials import Credentials
from plumbing.setting_values import SettingsError

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class OidcSettings:
    key_dir: Path
    issuer: str
    defaults: Credentials | None = None


def load(env: Mapping[str, str]) -> OidcSettings | None:
    raw_dir = (env.get("PLANGATE_OIDC_KEY_DIR") or "").strip()
    if not raw_dir:
        return None
    issuer = (env.get("PLANGATE_OIDC_ISSUER") or env.get("PLANGATE_PUBLIC_URL") or "").strip().rstrip("/")
    name = "PLANGATE_OIDC_ISSUER" if env.get("PLANGATE_OIDC_ISSUER") else "PLANGATE_PUBLIC_URL"
    if not issuer:
        problem = "is required with PLANGATE_OIDC_KEY_DIR (or set PLANGATE_PUBLIC_URL)"
        raise SettingsError("PLANGATE_OIDC_ISSUER", problem)
    parsed = urlparse(issuer)
    local = parsed.scheme == "http" and parsed.hostname in _LOOPBACK
    if not (parsed.scheme == "https" or local) or not parsed.hostname or parsed.query or parsed.fragment:
        raise SettingsError(name, f"the OIDC issuer must be an https URL without query, got {issuer!r}")
    return OidcSettings(Path(raw_dir).resolve(), issuer, _defaults(env))


def _defaults(env: Mapping[str, str]) -> Credentials | None:
    raw = (env.get("PLANGATE_OIDC_CREDENTIALS") or "").strip()
    if not raw:
        return None
    try:
        return msgspec.convert(json.loads(raw), Credentials)
    except (ValueError, msgspec.ValidationError) as exc:
        raise SettingsError("PLANGATE_OIDC_CREDENTIALS", f"not a credentials mapping: {exc}") from None
