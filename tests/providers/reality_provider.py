"""A real terraform provider (tfplugin6, over the `tf` package) whose objects live in JSON files.

terraform_data keeps nothing outside its state, so terraform can never see it drift. Each
`reality_object` here is a file (`path`) holding its attributes: the refresh reads the file, so a
file or a state edited by hand is drift terraform reports in `resource_drift`, as a cloud API's
object changed outside Terraform would be. Run by terraform as a provider binary: its interpreter
and `site-packages` are written into the launcher script (tests/reality.py) that execs this file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tf import schema, types
from tf.iface import Config, CreateContext, DeleteContext, ReadContext, State, UpdateContext
from tf.provider import Diagnostics, Provider, Resource
from tf.runner import run_provider


class RealityProvider(Provider):
    def full_name(self) -> str:
        return "example.com/test/reality"

    def get_model_prefix(self) -> str:
        return "reality_"

    def get_provider_schema(self, diags: Diagnostics) -> schema.Schema:
        return schema.Schema(attributes=[])

    def validate_config(self, diags: Diagnostics, config: Config) -> None:
        pass

    def configure_provider(self, diags: Diagnostics, config: Config) -> None:
        pass

    def get_data_sources(self) -> list[Any]:
        return []

    def get_resources(self) -> list[Any]:
        return [RealityObject]


class RealityObject(Resource):
    """`path` (required) names the file; `env` and `owner` are optional and computed, so what reality
    says of them, once accepted, is what the code expects too."""

    def __init__(self, provider: RealityProvider) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        return "object"

    @classmethod
    def get_schema(cls) -> schema.Schema:
        return schema.Schema(
            attributes=[
                schema.Attribute("path", types.String(), required=True, requires_replace=True),
                schema.Attribute("env", types.String(), optional=True, computed=True, default="prod"),
                schema.Attribute("owner", types.String(), optional=True, computed=True, default="ops"),
                schema.Attribute(
                    "token", types.String(), optional=True, computed=True, sensitive=True, default="t0k-initial-value"
                ),
            ]
        )

    def create(self, ctx: CreateContext, planned: State) -> State:
        Path(planned["path"]).write_text(json.dumps(planned))
        return planned

    def read(self, ctx: ReadContext, current: State) -> State | None:
        path = Path(current["path"])
        if not path.exists():
            return None
        return {**current, **json.loads(path.read_text()), "path": current["path"]}

    def update(self, ctx: UpdateContext, current: State, planned: State) -> State:
        Path(planned["path"]).write_text(json.dumps(planned))
        return planned

    def delete(self, ctx: DeleteContext, current: State) -> None:
        Path(current["path"]).unlink(missing_ok=True)


if __name__ == "__main__":
    run_provider(RealityProvider())
