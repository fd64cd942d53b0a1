"""``Idempotency-Key``: a retried request gets the first request's answer and stores nothing twice.

As payment APIs do it: the client sends a unique key with a request and the same key
with every retry of it. Keys belong to the request's user. The first request claims
the key and runs; a final answer (2xx, or a 4xx: the request itself was wrong) is
stored and every later request with the key gets it back, marked
``Idempotent-Replayed: true``. A 5xx is not final: the key is let go, and a retry runs
the turn again. The input is stored under an id made from the key
(:func:`input_memory_id`), so that retry finds the message already stored, adds the
reply, and never stores the message twice.

The same key with a different body is a 422; a retry that arrives while the first
request still runs is a 409 with ``Retry-After``. The running request renews its claim
every third of a lease (``LIZ_LEARNING_LEASE_SECONDS``, as learning's claims), so a
claim whose process died is taken over one lease after its last renewal. Keys are
kept :data:`KEY_LIFETIME`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import re
import uuid
from collections.abc import AsyncIterator
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
    renew_key,
)
from liz.errors import Conflict, InputError
from liz.runtime.services import Runtime
from liz.types import InputObject

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255
# How often a claim also clears out expired keys (housekeeping, shared by all processes).
PRUNE_CHANCE = 0.01
_WELL_FORMED_KEY = re.compile(r"[\x21-\x7e]+")
# The namespace of the ids inputs sent with a key are stored under.
_INPUT_IDS = uuid.UUID("6f1d1c8e-3a52-4f0e-9a57-8d3c1b7e2a41")


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


def input_memory_id(user_id: str, key: str, request_hash: str) -> str:
    """The id the input of a keyed request is stored under: the same for every retry."""
    return str(uuid.uuid5(_INPUT_IDS, f"{user_id}\n{key}\n{request_hash}"))


@dataclass
class KeyClaim:
    """A key this request holds: renew it while the turn runs (:meth:`held`), then
    :meth:`record` the outcome, or :meth:`release` it."""

    runtime: Runtime
    user_id: str
    key: str
    request_hash: str

    @property
    def input_memory_id(self) -> str:
        return input_memory_id(self.user_id, self.key, self.request_hash)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Renew the claim every third of a lease while the block runs."""
        renewing = asyncio.create_task(self._keep_renewing(), name="liz-idempotency-lease")
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def _keep_renewing(self) -> None:
        while True:
            await self.runtime.clock.sleep(_lease_seconds(self.runtime) / 3)
            try:
                async with self.runtime.sessions() as session, session.begin():
                    renewed = await renew_key(
                        session, self.user_id, self.key, self.request_hash, self.runtime.clock.now()
                    )
            except Exception as exc:  # the claim may run out; the turn goes on
                logger.warning("cannot renew the claim on Idempotency-Key %r: %s", self.key, exc)
                continue
            if not renewed:
                return

    async def record(self, outcome: Outcome) -> None:
        """Keep a final outcome (2xx, 4xx) for retries; let the key go after a 5xx, so a
        retry runs the turn again. If the database fails now, the caller still gets its
        answer; a retry then waits (409) until the claim runs out."""
        if outcome.status >= 500:
            await self.release()
            return
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


def _lease_seconds(runtime: Runtime) -> float:
    return runtime.settings.learning.lease_seconds


def _claim_is_stale(renewed_at: datetime, now: datetime, lease_seconds: float) -> bool:
    """A claim not renewed for a lease: its process died while the request ran."""
    return now - renewed_at > timedelta(seconds=lease_seconds)


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
            return KeyClaim(runtime, user_id, key, wanted)
        # Expired, or left by a process that died: this request runs in its place.
        expired = now - stored.created_at > KEY_LIFETIME
        abandoned = stored.status is None and _claim_is_stale(
            stored.created_at, now, _lease_seconds(runtime)
        )
        if (expired or abandoned) and await reclaim_key(
            session, user_id, key, stored.created_at, wanted, now
        ):
            return KeyClaim(runtime, user_id, key, wanted)
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
