"""A post X took but does not show yet is not posted again: the bot keeps looking first.

X answers a post call with a timeout after it took the tweet, and its timelines
(the account's own included) lag behind: the first lookups find nothing. Posting
again at once would put the tweet on X twice.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from liz.twitter.models import HandledTweetRecord

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world
from tests.test_twitter_exactly_once import top_level_posts


@pytest.mark.anyio
async def test_a_post_x_took_but_does_not_show_yet_is_not_posted_again(world: World) -> None:
    x = world.x
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(hours=1)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1


@pytest.mark.anyio
async def test_a_reply_x_took_but_does_not_show_yet_is_not_sent_again(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    await world.start(world.bot())
    await world.clock.advance(hours=1)
    assert len(x.replies_to(mention.id)) == 1
    [row] = await world.rows(HandledTweetRecord)
    assert (row.tweet_id, row.decision) == (str(mention.id), "replied")
