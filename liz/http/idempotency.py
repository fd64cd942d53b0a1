"""``Idempotency-Key``: a retried request gets the first request's answer and stores nothing twice.

As payment APIs do it: the client sends a unique key with a request and the same key
with every retry of it. Keys belong to the request's user. The first request claims
the key and runs; its answer (status and JSON body, failures included) is stored
and every later request with the key gets that answer back, marked
``Idempotent-Replayed: true``. The same key with a different body is a 422; a retry
that arrives while the first request still runs is a 409 (try again shortly). Keys
are kept :data:`KEY_LIFETIME`; a claim whose process died is taken over once it is
older than the request deadline allows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from starlette.requests import Request

from liz.db.idempotency import (
    StoredOutcome,
    claim_key,
    complete_key,
    prune_keys,
    reclaim_key,
    release_key,
)
from liz.errors import Conflict, InputError
from liz.runtime import Runtime
from liz.types import InputObject

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255
# How often a claim also clears out expired keys (housekeeping, shared by all processes).
PRUNE_CHANCE = 0.01
_WELL_FORMED_KEY = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class Outcome:
    """An answer to keep: its status, its JSON body and headers that are not stored."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class KeyReused(InputError):
    status = 422


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not _WELL_FORMED_KEY.fullmatch(key) or len(key) > MAX_KEY_LENGTH:
        raise InputError(
            f"{HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters "
            "(a UUID is a good choice)"
        )
    return key


def fingerprint(input: InputObject) -> str:
    """The same for a retry of a request, different for any change in its body."""
    fields = input.model_dump(mode="json", by_alias=True)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass
class KeyClaim:
    """A key this request holds: :meth:`record` its outcome, or :meth:`release` it."""

    runtime: Runtime
    user_id: str
    key: str

    async def record(self, outcome: Outcome) -> None:
        """Keep the outcome for retries. If the database fails now, the caller still gets
        its answer; a retry then waits (409) until the claim is taken over as abandoned."""
        try:
            async with self.runtime.sessions() as session, session.begin():
                await complete_key(
                    session,
                    self.user_id,
                    self.key,
                    outcome.status,
                    json.dumps(outcome.body),
                    self.runtime.clock.now(),
                )
        except Exception:
            logger.exception("could not store the outcome for Idempotency-Key %r", self.key)

    async def release(self) -> None:
        try:
            async with self.runtime.sessions() as session, session.begin():
                await release_key(session, self.user_id, self.key)
        except Exception:
            logger.exception("could not release Idempotency-Key %r", self.key)


def _claim_is_stale(claimed_at: datetime, now: datetime, request_timeout: float) -> bool:
    """A request that should have ended long ago: its process died while it ran."""
    limit = timedelta(seconds=request_timeout + 60) if request_timeout > 0 else timedelta(hours=1)
    return now - claimed_at > limit


async def claim(
    request: Request, runtime: Runtime, input: InputObject
) -> KeyClaim | Outcome | None:
    """None without a key; the stored :class:`Outcome` for a retry; else this request's claim."""
    key = idempotency_key(request)
    if key is None:
        return None
    user_id, wanted = input.user_id, fingerprint(input)
    now = runtime.clock.now()
    async with runtime.sessions() as session, session.begin():
        if random.random() < PRUNE_CHANCE:
            await prune_keys(session, KEY_LIFETIME, now)
        stored = await claim_key(session, user_id, key, wanted, now)
        if stored is None:
            return KeyClaim(runtime, user_id, key)
        # Expired, or left by a process that died: this request runs in its place.
        expired = now - stored.created_at > KEY_LIFETIME
        abandoned = stored.status is None and _claim_is_stale(
            stored.created_at, now, runtime.settings.liz_request_timeout
        )
        if (expired or abandoned) and await reclaim_key(
            session, user_id, key, stored.created_at, wanted, now
        ):
            return KeyClaim(runtime, user_id, key)
    return _answer_for_retry(key, stored, wanted)


def _answer_for_retry(key: str, stored: StoredOutcome, wanted: str) -> Outcome:
    if stored.request_hash != wanted:
        raise KeyReused(
            f"{HEADER} {key!r} was first sent with a different request body; "
            "send a new key for a new request"
        )
    if stored.status is None or stored.response is None:
        conflict = Conflict(
            f"a request with {HEADER} {key!r} is still running; try again when it has finished"
        )
        conflict.retry_after = 1
        raise conflict
    return Outcome(stored.status, json.loads(stored.response), {REPLAYED_HEADER: "true"})
