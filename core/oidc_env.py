"""How each cloud's SDK finds plangate's token inside a step's sandbox (pure): the token files to write (one
per audience), the files beside them (Google's external-account credential) and the environment naming
them, for one project's credentials in one phase.

A phase without an identity of its own for a cloud gets nothing for that cloud: an apply never falls back
to the plan's role, nor a plan to the apply's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.config import ProjectConfig
from core.config_credentials import Credentials

GOOGLE_STS = "https://sts.googleapis.com/v1/token"
GOOGLE_IAM = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
_SESSION = re.compile(r"[^A-Za-z0-9+=,.@_-]")


@dataclass(frozen=True)
class TokenFile:
    name: str  # file name inside the step's token directory
    audience: str


@dataclass(frozen=True)
class Identity:
    tokens: tuple[TokenFile, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # file name → text
    env: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.tokens


def session_name(project: str, phase: str) -> str:
    """AWS's RoleSessionName (2–64 of `[\\w+=,.@-]`): shows in CloudTrail which project and phase acted."""
    return _SESSION.sub("_", f"plangate-{project}-{phase}")[:64]


def identity(credentials: Credentials | None, phase: str, directory: str, project: str) -> Identity:
    """What a step of `phase` gets, its files under `directory` (a path the sandbox shows read-only)."""
    if credentials is None:
        return Identity()
    tokens: list[TokenFile] = []
    files: dict[str, str] = {}
    env: dict[str, str] = {}
    aws = credentials.aws
    if aws is not None and (role := aws.role(phase)) is not None:
        tokens.append(TokenFile("aws.jwt", aws.audience))
        env.update(
            AWS_WEB_IDENTITY_TOKEN_FILE=f"{directory}/aws.jwt",
            AWS_ROLE_ARN=role,
            AWS_ROLE_SESSION_NAME=session_name(project, phase),
        )
    gcp = credentials.gcp
    if gcp is not None:
        tokens.append(TokenFile("gcp.jwt", gcp.token_audience))
        external: dict[str, object] = {
            "type": "external_account",
            "audience": gcp.provider,
            "subject_token_type": JWT_TOKEN_TYPE,
            "token_url": GOOGLE_STS,
            "credential_source": {"file": f"{directory}/gcp.jwt"},
        }
        account = gcp.service_account(phase)
        if account is not None:
            external["service_account_impersonation_url"] = f"{GOOGLE_IAM}/{account}:generateAccessToken"
        files["gcp.json"] = json.dumps(external, indent=2)
        env["GOOGLE_APPLICATION_CREDENTIALS"] = f"{directory}/gcp.json"
    azure = credentials.azure
    if azure is not None and (client := azure.client_id(phase)) is not None:
        tokens.append(TokenFile("azure.jwt", azure.audience))
        token = f"{directory}/azure.jwt"
        env.update(
            AZURE_FEDERATED_TOKEN_FILE=token,
            AZURE_CLIENT_ID=client,
            AZURE_TENANT_ID=azure.tenant_id,
            ARM_USE_OIDC="true",
            ARM_OIDC_TOKEN_FILE_PATH=token,
            ARM_CLIENT_ID=client,
            ARM_TENANT_ID=azure.tenant_id,
        )
        if azure.subscription_id is not None:
            env["ARM_SUBSCRIPTION_ID"] = azure.subscription_id
    return Identity(tuple(tokens), files, env)


def credentials_for(
    projects: Sequence[ProjectConfig] | None, name: str, workspace: str, dir: str, defaults: Credentials | None
) -> Credentials | None:
    """A project's credentials as the default branch's `.plangate.yml` names them (`projects`: its list),
    matched by name, workspace and directory; the server's defaults for a project it does not list."""
    for listed in projects or ():
        if (listed.name, listed.workspace, listed.dir) == (name, workspace, dir):
            return listed.credentials if listed.credentials is not None else defaults
    return defaults
