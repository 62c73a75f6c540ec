"""installation, installation_repositories, ping: acknowledged; nothing to enqueue."""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from .context import Delivery

router = Router()


@router.register("ping")
@router.register("installation")
@router.register("installation_repositories")
async def acknowledge(event: Event, delivery: Delivery) -> None:
    delivery.outcome = "acknowledged"
