"""Sending pgvector's ``vector`` in its binary form on an asyncpg connection.

A list of 1536 floats bound as a ``real[]`` cost about 0.4 ms of the driver's
Python, one float at a time, and as much again of the server's, one element at a
time, then the cast. The binary form is a four-byte header and the floats' bytes,
made by numpy at once. liz.facts.pg_commit sends embeddings so, and
liz.facts.pg_search the query vector.
"""

from __future__ import annotations

import struct
import weakref
from typing import Any

import numpy as np

# Connections (asyncpg's) that send and read `vector` in pgvector's binary form.
_BINARY_VECTORS: weakref.WeakSet[Any] = weakref.WeakSet()
# The schema pgvector's type is in, as `::vector` finds it on this connection.
_VECTOR_SCHEMA = (
    "SELECT n.nspname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
    "WHERE t.oid = 'vector'::regtype"
)


async def send_vectors_binary(connection: Any) -> None:
    """Have this pooled connection send a ``vector`` as pgvector's binary form, once.

    Reading a ``vector`` on this connection then gives pgvector's ``Vector``, which
    pgvector's SQLAlchemy type reads as it reads the text form: the session's reads
    of embeddings are unchanged.
    """
    if connection in _BINARY_VECTORS:
        return
    from pgvector import Vector  # here: installs without PostgreSQL support lack it

    schema = await connection.fetchval(_VECTOR_SCHEMA)
    await connection.set_type_codec(
        "vector",
        schema=schema,
        encoder=vector_bytes,
        decoder=Vector.from_binary,
        format="binary",
    )
    _BINARY_VECTORS.add(connection)


def vector_bytes(value: Any) -> bytes:
    """pgvector's binary form: the dimension and a zero (two big-endian int16), then
    the components as big-endian float32."""
    if isinstance(value, str):  # the text form, '[1,2,3]', should anyone send it
        value = [float(part) for part in value.strip("[] ").split(",") if part.strip()]
    vector = np.asarray(value, dtype=">f4")
    return struct.pack(">HH", vector.size, 0) + vector.tobytes()
