"""One gidgethub router per event family; `router` joins them."""

from gidgethub.routing import Router

from . import checks, comments, installations, merge_queue, pulls, pushes, reviews

router = Router(
    checks.router,
    comments.router,
    installations.router,
    merge_queue.router,
    pulls.router,
    pushes.router,
    reviews.router,
)
