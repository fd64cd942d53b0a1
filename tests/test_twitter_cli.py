"""``liz twitter``: choosing the transport, and clear errors before anything runs."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from liz.app import App
from liz.cli.twitter_run import build_transport, run_twitter
from liz.config import Settings
from liz.db.engine import create_engine
from liz.errors import UsageError
from liz.llm import LLMClient
from liz.testing.fake_twitter import FakeTwitter
from liz.testing.openai_server import ScriptedOpenAI
from liz.twitter.api_transport import TweepyTransport
from liz.twitter.settings import TwitterSettings


def settings(**values: Any) -> TwitterSettings:
    return TwitterSettings(_env_file=None, **values)  # type: ignore[call-arg]


def test_dry_run_without_credentials_uses_the_fake() -> None:
    assert isinstance(build_transport(settings(dry_run=True)), FakeTwitter)


def test_api_transport_with_keys_is_tweepy() -> None:
    keys = {"api_key": "k", "api_secret": "s", "access_token": "t", "access_secret": "a"}
    assert isinstance(build_transport(settings(**keys)), TweepyTransport)
    assert isinstance(build_transport(settings(dry_run=True, **keys)), TweepyTransport)


def test_api_transport_without_keys_says_which_are_missing() -> None:
    with pytest.raises(UsageError, match=r"TWITTER_API_KEY.*README"):
        build_transport(settings())


@pytest.mark.skipif(
    importlib.util.find_spec("twikit") is not None, reason="twikit is installed here"
)
def test_twikit_without_the_package_names_the_extra() -> None:
    with pytest.raises(UsageError, match=r"pip install 'liz-agents\[twikit\]'"):
        build_transport(settings(transport="twikit", username="ada", password="pw"))


def test_twikit_without_login_says_what_to_set() -> None:
    with pytest.raises(UsageError, match="TWITTER_USERNAME and TWITTER_PASSWORD"):
        build_transport(settings(transport="twikit"))


@pytest.mark.anyio
async def test_unknown_agent_is_refused_with_the_known_ids(tmp_path: Path) -> None:
    ada = {"agentId": "ada", "name": "Ada", "system": "You are Ada."}
    (tmp_path / "ada.json").write_text(json.dumps(ada))
    with pytest.raises(UsageError, match="no agent with id 'bea'; the agents are: ada"):
        await run_twitter(App().add_agents_from(tmp_path), "bea", dry_run=True)


@pytest.mark.anyio
async def test_dry_run_writes_its_first_post_at_once_and_stores_nothing(
    tmp_path: Path, scripted: ScriptedOpenAI, llm: LLMClient, caplog: pytest.LogCaptureFixture
) -> None:
    ada = {"agentId": "ada", "name": "Ada", "system": "You are Ada, a tea lover."}
    (tmp_path / "ada.json").write_text(json.dumps(ada))
    database = tmp_path / "liz.db"
    scripted.respond_with(lambda request: "Steeping a first pot of the day.")
    app = App(
        settings=Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{database}"),  # type: ignore[call-arg]
        llm_client=llm,
    ).add_agents_from(tmp_path)
    caplog.set_level(logging.INFO, logger="liz.twitter")
    # The default interval is 4 hours: the post must not wait for it.
    bot = asyncio.create_task(run_twitter(app, "ada", dry_run=True, twitter_settings=settings()))
    try:
        async with asyncio.timeout(60):
            while "dry run: would post" not in caplog.text:
                await asyncio.sleep(0.05)
    finally:
        bot.cancel()
        await asyncio.gather(bot, return_exceptions=True)
    assert "Steeping a first pot of the day." in caplog.text
    engine = create_engine(f"sqlite+aiosqlite:///{database}")
    try:
        async with engine.connect() as connection:
            for table in ("Tweet", "Memory", "TwitterHandled", "TwitterOutbox"):
                count = await connection.scalar(text(f'SELECT count(*) FROM "{table}"'))
                assert (table, count) == (table, 0)
    finally:
        await engine.dispose()
