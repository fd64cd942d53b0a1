"""The floor: the least an app must do for one Liz turn, as a bare Starlette handler.

    FLOOR_DATABASE_URL=... OPENAI_BASE_URL=... python bench/floor_app.py --port 8000

Validate the body, read the user's last 100 messages, render the prompt, make one
chat call, insert two rows (the input and the reply) into Liz's ``Memory`` table.
SQLite through aiosqlite (one reading and one writing connection, writes queued in
the process), PostgreSQL through an asyncpg pool. Nothing else: no middleware, no
facts, no error handling beyond validation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import jinja2
import uvicorn
from openai import AsyncOpenAI
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SYSTEM = "You are a business advisor. Give practical, friendly advice."
PROMPT = jinja2.Environment(autoescape=False).from_string(
    "<PREVIOUS_CONVERSATION>\n"
    "{% for m in memories %}{{ m.who }} ({{ m.at }}): {{ m.text }}\n{% endfor %}"
    "</PREVIOUS_CONVERSATION>\n\n<CURRENT_USER_INPUT>\n{{ text }}\n</CURRENT_USER_INPUT>\n"
)
SELECT = (
    'SELECT "content", "generator", "userId", "createdAt" FROM "Memory" '
    'WHERE "userId" = {0} AND "agentId" = {1} ORDER BY "createdAt" DESC, "id" DESC LIMIT 100'
)
INSERT = (
    'INSERT INTO "Memory" ("id", "userId", "agentId", "roomId", "content", "type", '
    '"generator", "createdAt") VALUES ({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})'
)


class InputFields(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    agent_id: str = Field(alias="agentId", min_length=1)
    user_id: str = Field(alias="userId", min_length=1)
    text: str = Field(min_length=1)
    type: str = "text"


class Body(BaseModel):
    input: InputFields


class SqliteStore:
    def __init__(self, path: str) -> None:
        self.path = path
        self.write_lock = asyncio.Lock()

    async def open(self) -> None:
        import aiosqlite

        self.reader = await aiosqlite.connect(self.path, isolation_level=None)
        self.writer = await aiosqlite.connect(self.path, isolation_level=None)
        for connection in (self.reader, self.writer):
            await connection.execute("PRAGMA journal_mode=WAL")
            await connection.execute("PRAGMA synchronous=NORMAL")
            await connection.execute("PRAGMA busy_timeout=30000")

    async def close(self) -> None:
        await self.reader.close()
        await self.writer.close()

    async def recent(self, user_id: str, agent_id: str) -> list[tuple[Any, ...]]:
        cursor = await self.reader.execute(SELECT.format("?", "?"), (user_id, agent_id))
        rows = await cursor.fetchall()
        return [(c, g, u, datetime.fromtimestamp(t / 1000, UTC)) for c, g, u, t in rows]

    async def insert(self, rows: list[tuple[Any, ...]]) -> None:
        values = [(*row[:-1], int(row[-1].timestamp() * 1000)) for row in rows]
        async with self.write_lock:
            await self.writer.execute("BEGIN IMMEDIATE")
            await self.writer.executemany(INSERT.format(*["?"] * 8), values)
            await self.writer.execute("COMMIT")


class PostgresStore:
    def __init__(self, url: str) -> None:
        self.url = url

    async def open(self) -> None:
        import asyncpg

        self.pool = await asyncpg.create_pool(self.url, min_size=2, max_size=10)

    async def close(self) -> None:
        await self.pool.close()

    async def recent(self, user_id: str, agent_id: str) -> list[tuple[Any, ...]]:
        rows = await self.pool.fetch(SELECT.format("$1", "$2"), user_id, agent_id)
        return [tuple(row) for row in rows]

    async def insert(self, rows: list[tuple[Any, ...]]) -> None:
        async with self.pool.acquire() as connection, connection.transaction():
            await connection.executemany(INSERT.format(*(f"${i}" for i in range(1, 9))), rows)


def make_app(database_url: str, base_url: str) -> Starlette:
    if database_url.startswith("sqlite"):
        store: SqliteStore | PostgresStore = SqliteStore(database_url.split("///", 1)[1])
    else:
        store = PostgresStore(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    llm = AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)

    async def agent_input(request: Request) -> JSONResponse:
        try:
            body = Body.model_validate_json(await request.body())
        except ValidationError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        fields = body.input
        rows = await store.recent(fields.user_id, fields.agent_id)
        memories = [
            {
                "who": "You" if generator == "llm" else f"User {user}",
                "at": at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                "text": json.loads(content).get("text", ""),
            }
            for content, generator, user, at in reversed(rows)
        ]
        prompt = PROMPT.render(memories=memories, text=fields.text)
        said_at = datetime.now(UTC)
        completion = await llm.chat.completions.create(
            model="scripted-large",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
        )
        reply = completion.choices[0].message.content or ""
        room = f"{fields.agent_id}-{fields.user_id}"

        def row(text: str, generator: str, at: datetime) -> tuple[Any, ...]:
            content = json.dumps({"text": text})
            key = str(uuid.uuid4())
            return (key, fields.user_id, fields.agent_id, room, content, fields.type, generator, at)

        await store.insert(
            [row(fields.text, "external", said_at), row(reply, "llm", datetime.now(UTC))]
        )
        return JSONResponse({"text": reply, "agentId": fields.agent_id, "userId": fields.user_id})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.open()
        try:
            yield
        finally:
            await store.close()
            await llm.close()

    return Starlette(
        routes=[
            Route("/agent/input", agent_input, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = make_app(os.environ["FLOOR_DATABASE_URL"], os.environ["OPENAI_BASE_URL"])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", log_config=None)


if __name__ == "__main__":
    main()
