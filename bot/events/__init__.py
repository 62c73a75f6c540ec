"""One gidgethub router per event family; `router` joins them."""

from gidgethub.routing import Router

from . import comments, installations, pulls, pushes

router = Router(comments.router, installations.router, pulls.router, pushes.router)
