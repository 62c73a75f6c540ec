"""Environment → typed settings, read once at start-up; one clear line per bad value."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from core.project_limit import DEFAULT_MAX_PROJECTS
from core.sandbox_paths import MODES, SETTING, Grant, SandboxPaths, parse_grants
from core.status_settings import CLOSED, StatusAuth
from plumbing import oidc_settings
from plumbing import redis_url as urls
from plumbing import setting_values as values
from plumbing.oidc_settings import OidcSettings
from plumbing.setting_values import SettingsError

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
LOG_LEVELS = ("debug", "info", "warning", "error")  # PLANGATE_LOG_LEVEL, as Probot's LOG_LEVEL
# Secrets given either as `NAME` or as a file `NAME_PATH` names (a mounted secret).
FILE_SECRETS = (
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_CLIENT_SECRET",
    "REDIS_PASSWORD",
    "REDIS_SENTINEL_PASSWORD",
    "PLANGATE_STATUS_TOKEN",
)
# Read once at start-up, then removed from the process environment (see `forget_secrets`): no child
# process (git, bwrap, terraform) can inherit them, whatever env a caller hands it.
SECRET_VARIABLES = (*FILE_SECRETS, "REDIS_URL")
# Every setting naming a file that holds a secret (the setup flow's `.env` holds the App key): the
# worker refuses to start when a sandbox could read one of them.
SECRET_FILE_SETTINGS = (*(f"{name}_PATH" for name in FILE_SECRETS), "PLANGATE_ENV_FILE", "PLANGATE_OIDC_KEY_DIR")


@dataclass(frozen=True)
class Settings:
    app_id: int | None
    private_key: str | None  # PEM text; never logged
    webhook_secret: str | None  # never logged
    api_url: str
    redis_url: str
    workdir: Path
    tf_env: tuple[str, ...]
    tf_timeout: float
    tf_memory_mb: int
    mask_patterns: tuple[str, ...]
    drift_schedule: str | None  # server-wide drift schedule for repos that configure none
    sandbox: str = "bwrap"  # "bwrap" | "off"
    tf_cgroup: str = "auto"  # PLANGATE_TF_CGROUP: "auto" | "off" | a delegated cgroup directory
    sandbox_paths: SandboxPaths = field(default_factory=SandboxPaths)  # PLANGATE_SANDBOX_PATHS, _PLAN and _APPLY
    tf_env_plan: tuple[str, ...] = ()  # added to tf_env for PR plans and drift checks
    tf_env_apply: tuple[str, ...] = ()  # added to tf_env for `terraform apply` of a checked plan
    secret_files: tuple[tuple[str, Path], ...] = ()  # (setting, file) of SECRET_FILE_SETTINGS: never in a sandbox
    status_auth: StatusAuth = CLOSED  # who may read / and /metrics; secrets kept out of repr
    report: str = "checks"  # "checks" (check runs) | "statuses" (commit statuses only)
    log_level: str = "info"  # one of LOG_LEVELS
    github_retry_seconds: float = 120.0  # one GitHub request's retries on 5xx and dropped connections
    outage_window: float = 3600.0  # how long a job keeps coming back through an outage before it gives up
    max_projects: int = DEFAULT_MAX_PROJECTS  # projects one change may plan or apply (core/project_limit.py)
    public_url: str | None = None  # PLANGATE_PUBLIC_URL: where people reach the web process (run page links)
    oidc: OidcSettings | None = None  # plangate as terraform's OIDC issuer (plumbing/oidc_settings.py)

    def __repr__(self) -> str:
        return f"Settings(app_id={self.app_id}, api_url={self.api_url!r}, workdir={str(self.workdir)!r})"

    @property
    def redis_password(self) -> str | None:
        return urls.password(self.redis_url)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret this process holds, for the backstop mask of what it posts."""
        auth = self.status_auth
        redis = (self.redis_password, urls.sentinel_password(self.redis_url))
        found = (self.private_key, self.webhook_secret, *redis, auth.token, auth.client_secret)
        return tuple(s for s in found if s)


def _decode_private_key(raw: str, name: str) -> str:
    """Accept raw PEM, `\\n`-escaped PEM (one-line env vars) and base64 of the PEM."""
    text = raw.strip()
    if "\\n" in text and "-----BEGIN" in text:
        text = text.replace("\\n", "\n")
    elif "-----BEGIN" not in text:
        try:
            text = base64.b64decode("".join(text.split()), validate=True).decode("ascii").strip()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise SettingsError(name, "not a PEM private key (raw, \\n-escaped or base64)") from None
    try:
        key = load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError):
        raise SettingsError(name, "not a readable unencrypted PEM private key") from None
    if not isinstance(key, RSAPrivateKey):
        raise SettingsError(name, "GitHub App keys are RSA; this PEM holds another key type")
    return text + "\n"


def _read_secret(env: Mapping[str, str], name: str) -> str | None:
    """`NAME` from the environment, else the file `NAME_PATH` names (a mounted secret); None if neither
    (an empty file counts as unset, so a template's empty secret leaves the setting off)."""
    assert name in FILE_SECRETS, f"{name}_PATH must be in SECRET_FILE_SETTINGS, or no sandbox is checked for it"
    if env.get(name):
        return env[name]
    path = env.get(f"{name}_PATH")
    if not path:
        return None
    try:
        return Path(path).read_text().strip() or None
    except (OSError, UnicodeDecodeError) as exc:
        problem = getattr(exc, "strerror", None) or "not text"
        raise SettingsError(f"{name}_PATH", f"cannot read {path}: {problem}") from None


def _redis_url(env: Mapping[str, str]) -> str:
    """REDIS_URL, with REDIS_PASSWORD(_PATH) and REDIS_SENTINEL_PASSWORD(_PATH) put into it when given
    separately (mounted secret files), in a form redis-py reads back."""
    url = values.url(env, "REDIS_URL", DEFAULT_REDIS_URL, urls.SCHEMES)
    try:
        return urls.with_passwords(
            url, _read_secret(env, "REDIS_PASSWORD"), _read_secret(env, "REDIS_SENTINEL_PASSWORD")
        )
    except urls.BadURL as exc:
        raise SettingsError(exc.setting, exc.problem) from None


def _sandbox(env: Mapping[str, str]) -> tuple[str, SandboxPaths]:
    mode = (env.get("PLANGATE_SANDBOX") or "bwrap").strip()
    if mode not in MODES:
        raise SettingsError("PLANGATE_SANDBOX", f"must be one of {', '.join(MODES)}, got {mode!r}")
    common, plan, apply = (_grants(env, f"{SETTING}{suffix}") for suffix in ("", "_PLAN", "_APPLY"))
    return mode, SandboxPaths(common, plan, apply)


def _grants(env: Mapping[str, str], name: str) -> tuple[Grant, ...]:
    try:
        return parse_grants(env.get(name, ""))
    except ValueError as exc:
        raise SettingsError(name, str(exc)) from None


def _secret_files(env: Mapping[str, str]) -> tuple[tuple[str, Path], ...]:
    return tuple((name, Path(env[name])) for name in SECRET_FILE_SETTINGS if env.get(name))


def forget_secrets(environ: dict[str, str] | os._Environ[str]) -> None:
    """Drop the secret variables from this process's environment once the settings hold them."""
    for name in SECRET_VARIABLES:
        environ.pop(name, None)


def _private_key(env: Mapping[str, str]) -> str | None:
    if env.get("GITHUB_APP_PRIVATE_KEY"):
        return _decode_private_key(env["GITHUB_APP_PRIVATE_KEY"], "GITHUB_APP_PRIVATE_KEY")
    path = env.get("GITHUB_APP_PRIVATE_KEY_PATH")
    if not path:
        return None
    try:
        raw = Path(path).read_text()
    except OSError as exc:
        raise SettingsError("GITHUB_APP_PRIVATE_KEY_PATH", f"cannot read {path}: {exc.strerror}") from None
    return _decode_private_key(raw, "GITHUB_APP_PRIVATE_KEY_PATH")


def load(
    env: Mapping[str, str] | None = None,
    *,
    need_webhook: bool = False,
    need_app: bool = False,
    need_redis_password: bool = False,
) -> Settings:
    """Read every setting; `need_*` make the settings a process cannot run without mandatory."""
    env = os.environ if env is None else env
    raw_id = env.get("GITHUB_APP_ID", "").strip()
    if raw_id and not raw_id.isdigit():
        raise SettingsError("GITHUB_APP_ID", f"must be the App's numeric id, got {raw_id!r}")
    app_id = int(raw_id) if raw_id else None
    private_key = _private_key(env)
    secret = _read_secret(env, "GITHUB_WEBHOOK_SECRET")
    if need_webhook and secret is None:
        raise SettingsError("GITHUB_WEBHOOK_SECRET", "is required: webhooks cannot be verified without it")
    if need_app and app_id is None:
        raise SettingsError("GITHUB_APP_ID", "is required to authenticate as the GitHub App")
    if need_app and private_key is None:
        raise SettingsError(
            "GITHUB_APP_PRIVATE_KEY", "is required (or GITHUB_APP_PRIVATE_KEY_PATH) to sign the App JWT"
        )
    sandbox, grants = _sandbox(env)
    redis_url = _redis_url(env)
    if need_redis_password and not urls.password(redis_url) and not redis_url.startswith("unix:"):
        raise SettingsError(
            "REDIS_URL",
            "has no password: terraform shares the worker's network and must not reach an open Redis "
            "(redis://:PASSWORD@HOST:6379/0, or REDIS_PASSWORD_PATH)",
        )
    return Settings(
        app_id=app_id,
        private_key=private_key,
        webhook_secret=secret,
        api_url=values.url(env, "GITHUB_API_URL", DEFAULT_API_URL, ("http", "https")),
        redis_url=redis_url,
        workdir=Path(env.get("PLANGATE_WORKDIR") or "/tmp/plangate").resolve(),
        tf_env=values.names(env, "PLANGATE_TF_ENV"),
        tf_timeout=values.positive(env, "PLANGATE_TF_TIMEOUT", 1800.0),
        tf_memory_mb=int(values.positive(env, "PLANGATE_TF_MEMORY_MB", 4096)),
        mask_patterns=values.mask_patterns(env),
        drift_schedule=values.cron(env, "PLANGATE_DRIFT_SCHEDULE"),
        sandbox=sandbox,
        tf_cgroup=values.tf_cgroup(env),
        sandbox_paths=grants,
        tf_env_plan=values.names(env, "PLANGATE_TF_ENV_PLAN"),
        tf_env_apply=values.names(env, "PLANGATE_TF_ENV_APPLY"),
        secret_files=_secret_files(env),
        status_auth=_status_auth(env, app_id),
        report=values.choice(env, "PLANGATE_REPORT", ("checks", "statuses"), "checks"),
        log_level=values.choice(env, "PLANGATE_LOG_LEVEL", LOG_LEVELS, "info"),
        github_retry_seconds=values.positive(env, "PLANGATE_GITHUB_RETRY_SECONDS", 120.0),
        outage_window=values.positive(env, "PLANGATE_OUTAGE_WINDOW", 3600.0),
        max_projects=values.count(env, "PLANGATE_MAX_PROJECTS", DEFAULT_MAX_PROJECTS),
        public_url=_public_url(env),
        oidc=oidc_settings.load(env),
    )


# Workers put this URL into Markdown links and check runs' details_url: a scheme, a host and a plain path,
# nothing that could end a link early or carry a query.
_PUBLIC_URL = re.compile(r"https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~%/-]*)?")


def _public_url(env: Mapping[str, str]) -> str | None:
    """PLANGATE_PUBLIC_URL without its trailing slashes; None when unset (no links are written then)."""
    raw = (env.get("PLANGATE_PUBLIC_URL") or "").strip()
    if not raw:
        return None
    if not _PUBLIC_URL.fullmatch(raw):
        shown = raw.split("@")[-1][:100]  # never echo what could be a password in the URL's user part
        raise SettingsError(
            "PLANGATE_PUBLIC_URL", f"must be an http(s) URL with a host and a plain path, got {shown!r}"
        )
    return raw.rstrip("/")


def _status_auth(env: Mapping[str, str], app_id: int | None) -> StatusAuth:
    """PLANGATE_STATUS_PUBLIC, PLANGATE_STATUS_TOKEN(_PATH), GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET(_PATH).

    A secret is read from its variable, else from the file its `_PATH` variable names."""
    raw = {
        n: (env.get(n) or "").strip() for n in ("PLANGATE_STATUS_PUBLIC", "PLANGATE_STATUS_TOKEN", "GITHUB_CLIENT_ID")
    }

    public = raw["PLANGATE_STATUS_PUBLIC"].lower()
    if public not in ("", "true", "false", "1", "0", "yes", "no"):
        raise SettingsError("PLANGATE_STATUS_PUBLIC", f"must be true or false, got {public!r}")
    token = _read_secret(env, "PLANGATE_STATUS_TOKEN")
    if token is not None and not re.fullmatch(r"[\x21-\x7e]{16,}", token):
        where = "PLANGATE_STATUS_TOKEN" if raw["PLANGATE_STATUS_TOKEN"] else "PLANGATE_STATUS_TOKEN_PATH"
        raise SettingsError(where, "must be 16 or more visible ASCII characters, no spaces (openssl rand -hex 32)")
    client_id, client_secret = raw["GITHUB_CLIENT_ID"] or None, _read_secret(env, "GITHUB_CLIENT_SECRET")
    if client_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", client_id):
        raise SettingsError("GITHUB_CLIENT_ID", f"is not a GitHub App client id, got {client_id!r}")
    if client_id and not client_secret:
        raise SettingsError("GITHUB_CLIENT_SECRET", "is required with GITHUB_CLIENT_ID (or GITHUB_CLIENT_SECRET_PATH)")
    if client_secret and not client_id:
        raise SettingsError("GITHUB_CLIENT_ID", "is required with GITHUB_CLIENT_SECRET: sign-in needs both")
    if client_id and app_id is None:
        raise SettingsError(
            "GITHUB_APP_ID", "is required with GITHUB_CLIENT_ID: sign-in lists this App's installations"
        )
    return StatusAuth(
        public=public in ("true", "1", "yes"), token=token, client_id=client_id, client_secret=client_secret
    )
