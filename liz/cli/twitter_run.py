"""``liz twitter --agent ID [--dry-run]``: run one agent's bot loop until stopped."""

from __future__ import annotations

import logging
from importlib.util import find_spec

from liz.app import App
from liz.config.loading import load_settings
from liz.errors import UsageError
from liz.twitter.bot import TwitterBot
from liz.twitter.settings import TwitterSettings
from liz.twitter.transport import TwitterTransport

logger = logging.getLogger(__name__)


def build_transport(settings: TwitterSettings) -> TwitterTransport:
    """The transport ``TWITTER_TRANSPORT`` names; on dry run without credentials, the fake.

    A dry run needs no account: with no credentials for the chosen transport it
    runs against the in-memory fake X, so the operator sees the posts it would write.
    """
    from liz.testing.fake_twitter import FakeTwitter

    if settings.transport == "fake":
        return FakeTwitter(username=settings.username or "liz_bot")
    has_credentials = (
        settings.has_api_credentials
        if settings.transport == "api"
        else settings.has_login_credentials
    )
    if settings.dry_run and not has_credentials:
        logger.warning("dry run without X credentials: using the in-memory fake X")
        return FakeTwitter(username=settings.username or "liz_bot")
    if settings.transport == "twikit":
        from liz.twitter.twikit_transport import TwikitTransport

        return TwikitTransport.from_settings(settings)
    from liz.twitter.api_transport import TweepyTransport

    return TweepyTransport.from_settings(settings)


async def run_twitter(
    app: App,
    agent_id: str,
    *,
    dry_run: bool,
    twitter_settings: TwitterSettings | None = None,
) -> None:
    """Run the bot of ``app``'s agent ``agent_id``, through the app's chain, until cancelled
    or a fatal error.

    Raises :class:`UsageError` for an unknown agent or missing credentials and
    :class:`liz.twitter.errors.TwitterAuthError` when X refuses the credentials.
    """
    if find_spec("twitter_text") is None:  # X's length rules, for every post and reply
        raise UsageError(
            "the Twitter/X bot needs the twitter extra: pip install 'liz-agents[twitter]'"
        )
    twitter = twitter_settings or load_settings(TwitterSettings)
    if dry_run:
        twitter = twitter.model_copy(update={"dry_run": True})
    agent = app.agent(agent_id)
    transport = build_transport(twitter)
    try:
        async with app.open() as framework:
            bot = TwitterBot(agent, framework, transport, twitter)
            if twitter.dry_run:
                logger.info("dry run: posts and replies are written and logged, never posted")
            await bot.run()
    finally:
        await transport.aclose()
