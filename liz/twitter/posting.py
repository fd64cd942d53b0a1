"""The scheduled post: when the next one is due, and writing and posting it."""

from __future__ import annotations

import logging
import random
from datetime import datetime

from liz.errors import LizError
from liz.twitter.context import BotContext
from liz.twitter.splitter import split_into_tweets
from liz.twitter.store import last_post_time
from liz.twitter.transport import Tweet
from liz.types import InputObject, InputSource

logger = logging.getLogger(__name__)

POST_ROUTE = "create_new_tweet"


async def first_post_time(ctx: BotContext, rng: random.Random) -> datetime:
    """When the first post of this run is due, counting from the last post stored.

    A restart therefore neither posts again at once nor waits a whole interval anew.
    A dry run writes its first post at once, so the operator sees at once what it would post.
    """
    now = ctx.clock.now()
    if ctx.dry_run:
        return now
    async with ctx.sessions() as session:
        last = await last_post_time(session, account_id=ctx.account.id)
    if last is None:
        return now if ctx.settings.post_immediately else now + ctx.settings.post_interval(rng)
    return last + ctx.settings.post_interval(rng)


async def write_and_post(ctx: BotContext) -> list[Tweet]:
    """Have the agent write a post and post it (as a thread if long); nothing posted on dry run."""
    instruction = ctx.agent.templates.render(
        "twitter_post_instruction.j2",
        username=ctx.account.username,
        max_length=ctx.settings.max_tweet_length,
    )
    text = await ctx.ask_agent(
        InputObject(
            source=InputSource.INTERNAL,
            user_id=str(ctx.account.id),
            agent_id=ctx.agent.agent_id,
            room_id=f"twitter:posts:{ctx.account.username}",
            text=instruction,
            route=POST_ROUTE,
        )
    )
    texts = split_into_tweets(text, ctx.settings.max_tweet_length)
    if not texts:
        raise LizError("the agent wrote an empty post; nothing to post")
    if ctx.dry_run:
        logger.info("dry run: would post %d tweet(s): %r", len(texts), texts)
        return []
    posted = await ctx.post_thread(texts, reply_to=None)
    logger.info("posted %s (%d tweet(s))", posted[0].permanent_url, len(posted))
    return posted
