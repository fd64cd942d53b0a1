"""The scheduled post: when the next one is due, and writing and posting it exactly once."""

from __future__ import annotations

import logging
import random
from datetime import datetime

from liz.errors import LizError
from liz.twitter.context import BotContext
from liz.twitter.outbox import (
    POST_PREFIX,
    new_post_key,
    plan_thread,
    send_thread,
    unfinished_threads,
)
from liz.twitter.splitter import split_into_tweets
from liz.twitter.store import last_post_time
from liz.twitter.unseen_posts import last_unseen_post_time
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
        if await unfinished_threads(session, account_id=ctx.account.id, prefix=POST_PREFIX):
            return now  # a post cut short by the last run: finish it first
        last = await last_post_time(session, account_id=ctx.account.id)
    # A post X called a duplicate is out, though not in ``Tweet`` until X shows it.
    unseen = await last_unseen_post_time(ctx)
    if unseen is not None and (last is None or unseen > last):
        last = unseen
    if last is None:
        return now if ctx.settings.post_immediately else now + ctx.settings.post_interval(rng)
    return last + ctx.settings.post_interval(rng)


async def write_and_post(ctx: BotContext) -> list[int]:
    """Have the agent write a post and post it (as a thread if long); the ids of its tweets.

    A post that an earlier try left unfinished (cut short, or its fate unknown after
    a timeout) is finished instead, never written and posted anew. While X does not
    show a post whose call got no answer, this raises
    :class:`~liz.twitter.errors.TwitterPostUnconfirmed` and the loop looks again after
    its backoff. Nothing is posted or stored on dry run.
    """
    if not ctx.dry_run:
        async with ctx.sessions() as session:
            unfinished = await unfinished_threads(
                session, account_id=ctx.account.id, prefix=POST_PREFIX
            )
        if unfinished:
            return await _send(ctx, unfinished[0])
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
    key = new_post_key()
    async with ctx.sessions() as session, session.begin():
        await plan_thread(session, ctx, key, texts, reply_to=None)
    return await _send(ctx, key)


async def _send(ctx: BotContext, key: str) -> list[int]:
    tweet_ids = await send_thread(ctx, key)
    if not tweet_ids:
        # X refused it as a copy of the earlier call's post: it is out, its id not known.
        logger.info("posted %s (X does not show it yet)", key)
        return tweet_ids
    logger.info(
        "posted https://x.com/%s/status/%d (%d tweet(s))",
        ctx.account.username,
        tweet_ids[0],
        len(tweet_ids),
    )
    return tweet_ids
