"""Who is calling: the server (``LIZ_API_KEY``) or one user (a JWT signed with ``LIZ_JWT_SECRET``).

- ``LIZ_API_KEY`` is a server-to-server secret: its holder may act as any user.
- A user token is an HS256 JWT signed with ``LIZ_JWT_SECRET`` whose ``sub`` is the
  userId (``exp`` required). It may send that user's messages
  (``POST /agent/input``), list the agents, and use the routes under
  ``/agents/{agentId}/users/<its userId>/``; any other user's data is a 403.

With neither set, every request acts as the server. ``/health`` and the icon are
always open.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from urllib.parse import unquote

import jwt
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from liz.errors import Forbidden, LizError, Unauthorized
from liz.http.error_responses import error_response
from liz.runtime.input_rules import id_problem

OPEN_PATHS = frozenset({"/health", "/favicon.ico"})
# Telegram's webhook calls carry their own secret header instead (liz.telegram.webhook).
OPEN_PATH_PREFIXES = ("/telegram/",)
# What a user token may reach besides its own user's routes.
USER_PATHS = frozenset(
    {
        ("POST", "/agent/input"),
        ("GET", "/agents"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/playground"),
    }
)
_USER_SCOPED_PATH = re.compile(r"/agents/[^/]+/users/(?P<user>[^/]+)(?:/.*)?")
# A pending tool call: its handler checks the approval is the token's user's own.
_APPROVAL_PATH = re.compile(r"/agent/approvals/[^/]+")
JWT_ALGORITHM = "HS256"
BAD_SUBJECT = "the token's sub must be a userId: visible text, at most 256 characters"
CLOCK_SKEW_SECONDS = 30
# The latest expiry a user token may carry: a token for longer is a standing password.
MAX_TOKEN_LIFETIME_SECONDS = 366 * 24 * 3600


@dataclass(frozen=True)
class Caller:
    """Who sent a request. ``user_id`` None: the server itself, acting for any user."""

    user_id: str | None = None

    def check_may_act_as(self, user_id: str) -> None:
        """Raise :class:`Forbidden` unless this caller may read and write ``user_id``'s data."""
        if self.user_id is not None and self.user_id != user_id:
            raise Forbidden(
                f"this token is for user {self.user_id!r}; it cannot act for user {user_id!r}"
            )


SERVER = Caller()


def caller_of(request: Request) -> Caller:
    """The request's caller (the server when no credentials are configured)."""
    caller = getattr(request.state, "caller", None)
    return caller if isinstance(caller, Caller) else SERVER


def user_from_token(token: str, secret: str) -> str:
    """The userId a user token speaks for; :class:`Unauthorized` saying why not."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[JWT_ALGORITHM],
            options={"require": ["sub", "exp"]},
            leeway=CLOCK_SKEW_SECONDS,
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("the token has expired; get a new one") from None
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthorized(
            f"the token has no {exc.claim!r} claim; user tokens need sub (the userId) and exp"
        ) from None
    except jwt.InvalidSignatureError:
        raise Unauthorized("the token's signature does not match LIZ_JWT_SECRET") from None
    except jwt.InvalidAlgorithmError:
        raise Unauthorized(f"the token must be signed with {JWT_ALGORITHM}") from None
    except jwt.ImmatureSignatureError:
        raise Unauthorized("the token is not valid yet (its nbf or iat is in the future)") from None
    except jwt.InvalidAudienceError:
        raise Unauthorized("the token names an audience (aud); liz tokens carry none") from None
    except jwt.DecodeError:
        raise Unauthorized("the bearer value is neither LIZ_API_KEY nor a valid JWT") from None
    except jwt.exceptions.InvalidSubjectError:
        raise Unauthorized(BAD_SUBJECT) from None
    except jwt.InvalidTokenError as exc:
        raise Unauthorized(f"the token is not valid: {exc}") from None
    expires = claims["exp"]
    # PyJWT reads a numeric string as a number; the JWT spec wants a NumericDate.
    if isinstance(expires, bool) or not isinstance(expires, int | float):
        raise Unauthorized("the token's exp must be a number (seconds since 1970), not a string")
    if expires > time.time() + MAX_TOKEN_LIFETIME_SECONDS:
        raise Unauthorized(
            "the token's exp is more than a year away; issue tokens that expire sooner"
        )
    user_id = claims["sub"]
    if not isinstance(user_id, str) or id_problem(user_id) is not None:
        raise Unauthorized(BAD_SUBJECT)
    return user_id


class Authenticate:
    """Pure ASGI middleware: refuses a request without valid credentials before any route runs,
    and puts the :class:`Caller` on ``request.state.caller``."""

    def __init__(self, app: ASGIApp, api_key: str | None, jwt_secret: str | None) -> None:
        self.app = app
        self.expected = api_key.encode() if api_key else None
        self.jwt_secret = jwt_secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PATH_PREFIXES):
            await self.app(scope, receive, send)
            return
        try:
            caller = self.caller(dict(scope["headers"]).get(b"authorization", b""))
            if caller.user_id is not None:
                self.check_user_path(caller, scope["method"], scope["path"])
        except LizError as refusal:
            response = error_response(refusal, scope.get("state", {}).get("request_id"))
            if refusal.status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="liz"'
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    def caller(self, authorization: bytes) -> Caller:
        scheme, _, credential = authorization.partition(b" ")
        if scheme.lower() != b"bearer" or not credential.strip():
            raise Unauthorized(f"missing credentials: send Authorization: Bearer <{self.wanted}>")
        credential = credential.strip()
        if self.expected is not None and secrets.compare_digest(credential, self.expected):
            return SERVER
        if self.jwt_secret is None:
            raise Unauthorized("wrong API key: send Authorization: Bearer <LIZ_API_KEY>")
        try:
            token = credential.decode("ascii")
        except UnicodeDecodeError:
            raise Unauthorized("the bearer value is neither LIZ_API_KEY nor a valid JWT") from None
        return Caller(user_from_token(token, self.jwt_secret))

    @property
    def wanted(self) -> str:
        choices = []
        if self.expected is not None:
            choices.append("LIZ_API_KEY")
        if self.jwt_secret is not None:
            choices.append("a user token")
        return " or ".join(choices)

    @staticmethod
    def check_user_path(caller: Caller, method: str, path: str) -> None:
        if (method, path) in USER_PATHS:
            return
        if method == "POST" and _APPROVAL_PATH.fullmatch(path):
            return
        scoped = _USER_SCOPED_PATH.fullmatch(path)
        if scoped is None:
            raise Forbidden(
                "a user token may use POST /agent/input, GET /agents and the routes under "
                "/agents/{agentId}/users/<its own userId>/; this path needs LIZ_API_KEY"
            )
        caller.check_may_act_as(unquote(scoped["user"]))  # encoded by PathSegments
