"""``liz twitter``: choosing the transport, and clear errors before anything runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from liz.app import App
from liz.errors import UsageError
from liz.testing.fake_twitter import FakeTwitter
from liz.twitter.api_transport import TweepyTransport
from liz.twitter.cli import build_transport, run_twitter
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
    with pytest.raises(UsageError, match=r"pip install 'liz\[twikit\]'"):
        build_transport(settings(transport="twikit", username="ada", password="pw"))


def test_twikit_without_login_says_what_to_set() -> None:
    with pytest.raises(UsageError, match="TWITTER_USERNAME and TWITTER_PASSWORD"):
        build_transport(settings(transport="twikit"))


@pytest.mark.anyio
async def test_unknown_agent_is_refused_with_the_known_ids(tmp_path: Path) -> None:
    (tmp_path / "ada.json").write_text(json.dumps({"agentId": "ada", "name": "Ada"}))
    with pytest.raises(UsageError, match="no agent with id 'bea'; the agents are: ada"):
        await run_twitter(App().add_agents_from(tmp_path), "bea", dry_run=True)
