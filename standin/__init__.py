"""A faithful GitHub stand-in on loopback: REST API, git over HTTP, signed webhooks."""

from standin.facade import StandIn
from standin.gitops import Identity
from standin.keys import new_private_key_pem
from standin.limits import Limits, Window
from standin.server import Running, start

__all__ = ["Identity", "Limits", "Running", "StandIn", "Window", "new_private_key_pem", "start"]
