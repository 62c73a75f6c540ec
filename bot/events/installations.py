"""installation, installation_repositories: refresh the drift targets; ping: acknowledged."""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.contract import Jobs

from .context import Delivery

router = Router()


@router.register("ping")
async def acknowledge(event: Event, delivery: Delivery) -> None:
    delivery.outcome = "acknowledged"


@router.register("installation")
@router.register("installation_repositories")
async def refresh_drift_targets(event: Event, delivery: Delivery) -> None:
    """The set of installed repositories changed: re-read which ones have drift checks.

    One refresh waiting in the queue covers every event that arrives meanwhile (unique id; the
    finished job keeps no result, so the next change enqueues a new one).
    """
    await delivery.enqueue(delivery.plans, Jobs.REFRESH_DRIFT_TARGETS, "drift-targets-refresh", None)
