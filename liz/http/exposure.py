"""Who can reach a served process: a server open to the network must ask for a key.

``liz serve`` calls :func:`check_exposure` before it listens: bound to an address other
than loopback, it refuses to start without ``LIZ_API_KEY`` or ``LIZ_JWT_SECRET``
(unless ``LIZ_ALLOW_OPEN=true``), and without ``LIZ_ALLOWED_HOSTS`` (the names its
callers use, which the Host check needs).
"""

from __future__ import annotations

import ipaddress

from liz.config import Settings
from liz.errors import UsageError


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name other than localhost may resolve anywhere
        return False


def check_exposure(settings: Settings, host: str) -> None:
    """Raise :class:`UsageError` when serving ``settings`` on ``host`` would be open by mistake."""
    if is_loopback(host):
        return
    if not (settings.liz_api_key or settings.liz_jwt_secret or settings.liz_allow_open):
        raise UsageError(
            f"refusing to serve on {host}, which other machines can reach, without a key: "
            "set LIZ_API_KEY (or LIZ_JWT_SECRET for user tokens), or LIZ_ALLOW_OPEN=true "
            "to let anyone who reaches it act as any user"
        )
    if not settings.liz_allowed_hosts:
        raise UsageError(
            f"serving on {host} needs LIZ_ALLOWED_HOSTS: the host names clients use to "
            "reach this server, comma-separated (e.g. liz.example.com), or * for any"
        )
