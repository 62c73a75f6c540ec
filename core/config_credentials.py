"""`projects[].credentials` of `.plangate.yml`: which cloud identity each phase of a project's terraform
gets for plangate's OIDC token (pure; msgspec Structs checked like the rest of core.config_schema).

Read from the default branch only, like every policy key: a pull request that names the apply role in
its own `.plangate.yml` changes nothing its plan gets.
"""

from __future__ import annotations

import re

import msgspec

from core.quoted import shown

AWS_ROLE = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}")
GCP_PROVIDER = re.compile(
    r"//iam\.googleapis\.com/projects/\d+/locations/global/workloadIdentityPools/[a-z0-9-]{4,32}/providers/[a-z0-9-]{4,32}"
)
GCP_ACCOUNT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9-]+\.iam\.gserviceaccount\.com")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
AUDIENCE = re.compile(r"[\x21-\x7e]{1,256}")
AWS_AUDIENCE = "sts.amazonaws.com"
AZURE_AUDIENCE = "api://AzureADTokenExchange"


def _invalid(field: str, problem: str) -> ValueError:
    return ValueError(f"{field}: {problem}")


def _check(value: str | None, field: str, pattern: re.Pattern[str], what: str) -> None:
    if value is not None and not pattern.fullmatch(value):
        raise _invalid(field, f"{shown(value)} is not a valid {what}")


class _Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A mapping of `.plangate.yml`: a key it does not declare is an error."""


class AwsCredentials(_Strict, frozen=True):
    """`AssumeRoleWithWebIdentity` into `plan_role` for plans and drift checks, `apply_role` for applies."""

    plan_role: str | None = None
    apply_role: str | None = None
    audience: str = AWS_AUDIENCE

    def __post_init__(self) -> None:
        _check(self.plan_role, "plan_role", AWS_ROLE, "IAM role ARN")
        _check(self.apply_role, "apply_role", AWS_ROLE, "IAM role ARN")
        _check(self.audience, "audience", AUDIENCE, "audience")

    def role(self, phase: str) -> str | None:
        return self.apply_role if phase == "apply" else self.plan_role


class GcpCredentials(_Strict, frozen=True):
    """Workload identity federation: `provider` is the pool provider's resource name; the token's audience
    is Google's default for it unless `audience` says otherwise. A service account per phase is
    impersonated when given (else the federated identity is used directly)."""

    provider: str
    plan_service_account: str | None = None
    apply_service_account: str | None = None
    audience: str | None = None

    def __post_init__(self) -> None:
        _check(self.provider, "provider", GCP_PROVIDER, "workload identity pool provider name")
        _check(self.plan_service_account, "plan_service_account", GCP_ACCOUNT, "service account email")
        _check(self.apply_service_account, "apply_service_account", GCP_ACCOUNT, "service account email")
        _check(self.audience, "audience", AUDIENCE, "audience")

    @property
    def token_audience(self) -> str:
        return self.audience or f"https:{self.provider}"

    def service_account(self, phase: str) -> str | None:
        return self.apply_service_account if phase == "apply" else self.plan_service_account


class AzureCredentials(_Strict, frozen=True):
    """An app registration (client id) per phase, federated with plangate's issuer."""

    tenant_id: str
    plan_client_id: str | None = None
    apply_client_id: str | None = None
    subscription_id: str | None = None
    audience: str = AZURE_AUDIENCE

    def __post_init__(self) -> None:
        _check(self.tenant_id, "tenant_id", UUID, "tenant id (a UUID)")
        _check(self.plan_client_id, "plan_client_id", UUID, "client id (a UUID)")
        _check(self.apply_client_id, "apply_client_id", UUID, "client id (a UUID)")
        _check(self.subscription_id, "subscription_id", UUID, "subscription id (a UUID)")
        _check(self.audience, "audience", AUDIENCE, "audience")

    def client_id(self, phase: str) -> str | None:
        return self.apply_client_id if phase == "apply" else self.plan_client_id


class Credentials(_Strict, frozen=True):
    aws: AwsCredentials | None = None
    gcp: GcpCredentials | None = None
    azure: AzureCredentials | None = None


STRUCTS: dict[str, type[msgspec.Struct]] = {
    "credentials": Credentials,
    "aws": AwsCredentials,
    "gcp": GcpCredentials,
    "azure": AzureCredentials,
}
