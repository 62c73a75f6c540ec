"""A faithful GitHub stand-in on loopback: REST API, git over HTTP, signed webhooks."""

from standin.facade import StandIn
from standin.keys import new_private_key_pem
from standin.server import Running, start

__all__ = ["Running", "StandIn", "new_private_key_pem", "start"]
