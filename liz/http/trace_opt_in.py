"""``?trace=1``: the caller asks for the turn's trace beside the reply.

The trace holds the agent's whole system prompt and the user's recalled facts, so
it is never sent unasked, only to the server's own key (not to a user token, unless
``LIZ_TRACES_FOR_USERS=true``), and not at all when ``LIZ_PLAYGROUND=false`` (a
server whose callers should not see how its agents are prompted).
"""

from __future__ import annotations

from starlette.requests import Request

from liz.config import Settings
from liz.errors import Forbidden, InputError, LizError
from liz.http.auth import caller_of

YES = frozenset({"1", "true"})
NO = frozenset({"0", "false"})


def wants_trace(request: Request) -> bool:
    """True when the query says ``trace=1`` (or ``true``); a clear 400/403 when it cannot be."""
    raw = request.query_params.get("trace")
    if raw is None or raw.lower() in NO:
        return False
    if raw.lower() not in YES:
        raise InputError(f"trace must be 1 or 0 (true or false), got {raw!r}")
    settings: Settings = request.app.state.framework.runtime.settings
    if not settings.liz_playground:
        raise LizError(
            "traces are off on this server (LIZ_PLAYGROUND=false); ask without ?trace=1",
            status=403,
        )
    if caller_of(request).user_id is not None and not settings.liz_traces_for_users:
        raise Forbidden(
            "traces go to LIZ_API_KEY only, not to user tokens (they hold the agent's "
            "prompt); ask without ?trace=1, or set LIZ_TRACES_FOR_USERS=true"
        )
    return True
