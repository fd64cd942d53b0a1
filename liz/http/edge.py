"""The ASGI middleware every request passes before a route, outermost first.

1. ``RequestContext``: the request id, and an answer for any failure;
2. ``HostCheck``: the Host header names this server (``LIZ_ALLOWED_HOSTS``);
3. ``PathSegments``: an id in a path may hold an encoded ``/`` or ``%``;
4. ``RequestDeadline``: ``LIZ_REQUEST_TIMEOUT``;
5. ``Authenticate``: ``LIZ_API_KEY`` and user tokens (``LIZ_JWT_SECRET``), after any
   middleware that must see a request before it is refused (the playground's key prompt);
6. ``JsonBodiesOnly``: writes are JSON (no cross-site form or text POST);
7. ``BodyLimit``: no body over 1 MB is read, nor one slower than ``LIZ_BODY_TIMEOUT``.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware import Middleware

from liz.config import Settings
from liz.http.auth import Authenticate
from liz.http.body import BodyLimit
from liz.http.cross_site import HostCheck, JsonBodiesOnly, allowed_hosts
from liz.http.deadline import RequestDeadline
from liz.http.metrics import PublicMetrics
from liz.http.path_segments import PathSegments
from liz.http.request_context import RequestContext
from liz.observe.asgi import ServerSpan


def edge_middleware(
    settings: Settings, *, before_auth: Sequence[Middleware] = ()
) -> list[Middleware]:
    """The edge middleware for ``settings``; ``before_auth`` goes just before ``Authenticate``."""
    api_key = settings.liz_api_key.get_secret_value() if settings.liz_api_key else None
    # Its length was checked with the other settings (liz.config).
    jwt_secret = settings.liz_jwt_secret.get_secret_value() if settings.liz_jwt_secret else None
    middleware = [
        Middleware(ServerSpan),  # the request's trace (liz.observe), outside the request id
        Middleware(RequestContext),
        Middleware(HostCheck, hosts=allowed_hosts(settings)),
        Middleware(PathSegments),
        Middleware(RequestDeadline, seconds=settings.liz_request_timeout),
    ]
    middleware.extend(before_auth)
    if settings.liz_metrics_public:
        middleware.append(Middleware(PublicMetrics))
    if api_key or jwt_secret:
        middleware.append(Middleware(Authenticate, api_key=api_key, jwt_secret=jwt_secret))
    middleware.append(Middleware(JsonBodiesOnly))
    middleware.append(Middleware(BodyLimit, timeout=settings.liz_body_timeout))
    return middleware
