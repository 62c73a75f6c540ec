"""Where the App is installed: its installations (as the App), each one's repositories (as the installation)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gidgethub.abc import GitHubAPI

from workers.adapters.github.auth import app_client


async def installation_ids(app_id: int, private_key: str, api_url: str) -> list[int]:
    """Every installation of the App (needs the App JWT)."""
    async with app_client(app_id, private_key, api_url) as (app, jwt):
        return [int(i["id"]) async for i in app.getiter("/app/installations", jwt=jwt)]


def repositories(gh: GitHubAPI) -> AsyncIterator[dict[str, Any]]:
    """The repositories the installation `gh` acts as can reach, page by page."""
    return gh.getiter("/installation/repositories", iterable_key="repositories")
