"""Which Telegram messages the bot answers, and what each says to the agent.

In a private chat, every message with text (or a photo's caption). In a group,
only a message that mentions the bot by its @username, replies to one of the
bot's own messages, or is a command addressed to it (``/ask@the_bot``); the rest
of a group's talk is read and left alone. ``/start`` becomes a request to greet.
Stickers, voice notes and other media without a caption are skipped, never an
error. With an allowlist, everyone else's messages are skipped before any LLM call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from telegram import Message, MessageEntity, Update

from liz.connectors.platform import BotIdentity, Incoming

# Renders the greeting request for /start, given the sender's first name.
Greeting = Callable[[str], str]


def to_answer(
    update: Update, me: BotIdentity, *, allowed_users: Collection[int], greeting: Greeting
) -> Incoming | None:
    """The message of ``update`` to answer, or None when the bot leaves it alone."""
    message = update.message
    if message is None or message.from_user is None or message.from_user.is_bot:
        return None
    sender = message.from_user
    if allowed_users and sender.id not in allowed_users:
        return None
    text = message.text if message.text is not None else message.caption
    if not text or not text.strip():
        return None
    entities = message.parse_entities() if message.text else message.parse_caption_entities()
    private = message.chat.type == "private"
    command, addressed_to = _leading_command(text, entities)
    if addressed_to is not None and addressed_to.lower() != me.username.lower():
        return None  # a command for another bot in the chat
    if not private and not _addressed(message, entities, me, command_to_me=addressed_to):
        return None
    if command == "/start":
        text = greeting(sender.first_name)
    chat_id = str(message.chat.id)
    return Incoming(
        message_key=f"{chat_id}:{message.message_id}",
        sequence=update.update_id,
        user_id=f"telegram:{sender.id}",
        room_id=f"telegram:{chat_id}",
        chat_id=chat_id,
        text=text,
        # In a group the reply quotes the message it answers, so the thread is clear.
        reply_to=None if private else str(message.message_id),
    )


def _leading_command(
    text: str, entities: Mapping[MessageEntity, str]
) -> tuple[str | None, str | None]:
    """The command the message starts with (``/start``) and the bot it names, if any."""
    for entity, value in entities.items():
        if entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
            name, _, bot = value.partition("@")
            return name.lower(), bot or None
    return None, None


def _addressed(
    message: Message,
    entities: Mapping[MessageEntity, str],
    me: BotIdentity,
    *,
    command_to_me: str | None,
) -> bool:
    """Whether a group message is for the bot."""
    if command_to_me is not None:
        return True
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and str(replied.from_user.id) == me.id:
        return True
    mention = f"@{me.username}".lower()
    for entity, value in entities.items():
        if entity.type == MessageEntity.MENTION and value.lower() == mention:
            return True
        if (
            entity.type == MessageEntity.TEXT_MENTION
            and entity.user
            and str(entity.user.id) == me.id
        ):
            return True
    return False
