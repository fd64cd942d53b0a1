"""The conversation ``bench/learning_cost.py`` replays, and the scripted model that
answers it as a careful LLM would: facts said, repeated and contradicted, by users
who talk in bursts of messages seconds apart, hours between their conversations.
``answer`` answers liz's prompts; ``answer_mem0`` answers mem0's ``add`` (``infer=True``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from liz.testing.openai_server import RecordedRequest


@dataclass(frozen=True)
class Fact:
    key: str  # what the fact is about: a later fact with the same key replaces it
    text: str
    subject: str = "user"
    categories: tuple[str, ...] = ("personal", "profile")


def home(city: str) -> Fact:
    return Fact("home", f"User lives in {city}", categories=("location", "home"))


# Per user, conversations; per conversation, (seconds since the previous message, text,
# the fact it states or None).
Line = tuple[float, str, Fact | None]
DIET, MUSIC, WORK = ("food", "diet"), ("music", "hobbies"), ("work", "school")
FAMILY, PETS, TRAVEL = ("family", "relations"), ("pets", "family"), ("travel", "plans")
CONVERSATIONS: dict[str, list[list[Line]]] = {
    "ann": [
        [
            (0, "Hi! I need some help planning my week.", None),
            (8, "I live in Paris, near the canal.", home("Paris")),
            (12, "I work as a nurse, mostly night shifts.", Fact("job", "User works as a nurse")),
            (15, "What could I cook after a long shift?", None),
            (9, "I am vegetarian, by the way.", Fact("diet", "User is vegetarian", "user", DIET)),
            (20, "Actually, I moved to Berlin last month.", home("Berlin")),
            (14, "Can you suggest a quick lentil dish?", None),
            (18, "How long does it keep in the fridge?", None),
            (9, "My shift starts at eight tonight.", None),
            (6, "Thanks, that helps!", None),
        ],
        [
            (0, "Hello again, still settling into Berlin.", home("Berlin")),
            (
                10,
                "I adopted a dog named Rex.",
                Fact("pet", "User has a dog named Rex", "user", PETS),
            ),
            (14, "I still work as a nurse.", Fact("job", "User works as a nurse")),
            (
                11,
                "I eat fish again, so not vegetarian.",
                Fact("diet", "User is pescatarian", "user", DIET),
            ),
            (7, "Any park for Rex near Kreuzberg?", None),
            (15, "Is it fine to let him off the lead there?", None),
            (12, "And what about a fish recipe for two?", None),
            (
                9,
                "My brother Leo visits next week.",
                Fact("leo", "User's brother Leo visits next week", "user's brother Leo", FAMILY),
            ),
            (10, "He loves spicy food, any idea?", None),
            (6, "Great, thanks!", None),
        ],
    ],
    "bob": [
        [
            (0, "hey", None),
            (
                5,
                "I play the cello in an amateur orchestra.",
                Fact("music", "User plays the cello", "user", MUSIC),
            ),
            (
                13,
                "My sister Mia lives in Oslo.",
                Fact("mia", "User's sister Mia lives in Oslo", "user's sister Mia", FAMILY),
            ),
            (
                9,
                "I drive an old Volvo to work.",
                Fact("commute", "User drives an old Volvo to work", "user", TRAVEL),
            ),
            (18, "Any tips for practising scales?", None),
            (12, "How long should I practise each day?", None),
            (14, "We play Dvorak in the spring concert.", None),
            (10, "Which recording should I listen to?", None),
            (
                9,
                "I play the cello in an amateur orchestra.",
                Fact("music", "User plays the cello", "user", MUSIC),
            ),
            (10, "ok thanks", None),
        ],
        [
            (
                0,
                "I switched from the cello to the viola.",
                Fact("music", "User plays the viola", "user", MUSIC),
            ),
            (
                16,
                "I sold the Volvo and cycle to work now.",
                Fact("commute", "User cycles to work", "user", TRAVEL),
            ),
            (
                12,
                "Mia still lives in Oslo, I visit her in May.",
                Fact("mia", "User's sister Mia lives in Oslo", "user's sister Mia", FAMILY),
            ),
            (8, "What should I pack for Oslo?", None),
            (13, "Is it very cold there in May?", None),
            (11, "I hate the cold, honestly.", Fact("cold", "User hates the cold")),
            (9, "Should I take the viola along?", None),
            (12, "Good point about the airline.", None),
            (7, "bye", None),
        ],
    ],
    "cleo": [
        [
            (0, "Good morning!", None),
            (6, "I am learning Japanese.", Fact("language", "User is learning Japanese")),
            (14, "I live in Lyon.", home("Lyon")),
            (
                11,
                "My favourite food is ramen.",
                Fact("food", "User's favourite food is ramen", "user", DIET),
            ),
            (17, "Can you quiz me on numbers?", None),
            (5, "ichi, ni, san", None),
            (
                9,
                "My favourite food is sushi now, not ramen.",
                Fact("food", "User's favourite food is sushi", "user", DIET),
            ),
            (11, "How do I count past ten?", None),
            (8, "see you", None),
        ],
        [
            (0, "I passed the JLPT N5!", Fact("jlpt", "User passed the JLPT N5")),
            (
                12,
                "I am learning Japanese for a trip to Kyoto.",
                Fact("language", "User is learning Japanese"),
            ),
            (9, "What should I see in Kyoto?", None),
            (14, "Is October a good month to go?", None),
            (
                10,
                "I travel with my partner Sam.",
                Fact("sam", "User travels with partner Sam", "user's partner Sam", TRAVEL),
            ),
            (
                12,
                "Sam does not eat fish.",
                Fact(
                    "sam-food", "User's partner Sam does not eat fish", "user's partner Sam", DIET
                ),
            ),
            (9, "Where could we eat in Gion then?", None),
            (13, "And a cheap hotel near the station?", None),
            (8, "arigato!", None),
        ],
    ],
    "dan": [
        [
            (0, "hello there", None),
            (
                7,
                "I am a teacher in Leeds.",
                Fact("job", "User is a teacher in Leeds", "user", WORK),
            ),
            (10, "I have two cats.", Fact("pet", "User has two cats", "user", PETS)),
            (13, "How do I keep them off the desk?", None),
            (
                8,
                "I am allergic to peanuts.",
                Fact("allergy", "User is allergic to peanuts", "user", DIET),
            ),
            (15, "Can cats eat peanut butter anyway?", None),
            (11, "What about tuna?", None),
            (14, "Which plants are poisonous to cats?", None),
            (9, "We have lilies in the garden.", None),
            (10, "Thanks, I will move them.", None),
        ],
        [
            (
                0,
                "I now teach in York, I changed schools.",
                Fact("job", "User is a teacher in York", "user", WORK),
            ),
            (
                9,
                "I have two cats, Tom and Pip.",
                Fact("pet", "User has two cats named Tom and Pip", "user", PETS),
            ),
            (11, "Lesson ideas about volcanoes?", None),
            (
                13,
                "My class is eleven year olds.",
                Fact("class", "User teaches eleven year olds", "user", WORK),
            ),
            (10, "Could we build a model volcano?", None),
            (12, "With baking soda, right?", None),
            (
                9,
                "I am allergic to peanuts, no snacks with them.",
                Fact("allergy", "User is allergic to peanuts", "user", DIET),
            ),
            (6, "thank you!", None),
        ],
    ],
}
# Between two conversations of one user: far longer than any idle time.
APART_SECONDS = 3 * 3600.0

STATED = {
    text: fact
    for conversations in CONVERSATIONS.values()
    for conversation in conversations
    for _, text, fact in conversation
}
BY_TEXT = {fact.text: fact for fact in STATED.values() if fact is not None}

REPLY = "Noted, thank you for telling me."
NUMBERED = re.compile(r'<MESSAGE number="(\d+)">\nuser: (.*)$', re.M)
LISTED = re.compile(r"^(\d+)\. \[(.*?)\] (.*)$", re.M)
NEW = "## New Messages\n"  # where mem0's extraction prompt lists the exchange to learn


def timeline() -> list[tuple[float, str, str]]:
    """Every message as (seconds from the start, user, text), users interleaved."""
    said = []
    for offset, (user, conversations) in enumerate(CONVERSATIONS.items()):
        at = offset * 4.0  # the users start a few seconds apart and talk at once
        for conversation in conversations:
            for gap, text, _ in conversation:
                at += gap
                said.append((at, user, text))
            at += APART_SECONDS
    return sorted(said)


def answer(request: RecordedRequest) -> Any:
    """The scripted model: replies, routes, and extracts and reconciles as the prompts ask."""
    if request.schema_name == "RouteChoice":
        return {"route": "conversation", "confidence": 0.9, "reasoning": "the user is chatting"}
    if request.schema_name == "ExtractedFacts":
        return {"facts": extract(request.prompt)}
    if request.schema_name == "ReconcilePlan":
        return {"decisions": reconcile(request.prompt)}
    return REPLY


def answer_mem0(request: RecordedRequest) -> Any:
    """mem0's extraction (one JSON-mode call per ``add``, its answer a ``memory`` list of
    ``{"id", "text"}``): the facts the new messages state that the memories mem0 found
    for them do not already hold. mem0 only adds, so a contradicted fact stays."""
    asked = request.messages[-1].get("content")  # the system prompt holds the same headings
    if (request.response_format or {}).get("type") != "json_object" or NEW not in str(asked):
        raise ValueError(f"not a request of the mem0 this bench knows: {request.prompt[:200]!r}")
    before, after = str(asked).split(NEW, 1)
    existing = before.split("## Existing Memories", 1)[-1]
    new = after.split("\n## ", 1)[0]
    texts: list[str] = []
    for line in new.splitlines():
        said = line.removeprefix("user: ").strip() if line.startswith("user: ") else ""
        fact = STATED.get(said)
        if fact is not None and json.dumps(fact.text) not in existing and fact.text not in texts:
            texts.append(fact.text)
    return {"memory": [{"id": str(number), "text": text} for number, text in enumerate(texts)]}


def extract(prompt: str) -> list[dict[str, Any]]:
    """One fact per message that states one, in order; a fact a later message of the
    prompt changes is marked so, a fact said again keeps the first message's number."""
    kept: dict[str, tuple[int, Fact]] = {}
    changed: list[tuple[int, Fact]] = []
    for number, said in NUMBERED.findall(prompt):
        fact = STATED.get(said.strip())
        if fact is None:
            continue
        earlier = kept.get(fact.key)
        if earlier is not None and earlier[1].text != fact.text:
            changed.append(earlier)
        if earlier is None or earlier[1].text != fact.text:
            kept[fact.key] = (int(number), fact)
    facts = [(number, fact, True) for number, fact in changed]
    facts += [(number, fact, False) for number, fact in kept.values()]
    return [
        {
            "message": number,
            "text": fact.text,
            "subject": fact.subject,
            "categories": list(fact.categories),
            "changed_later": later,
        }
        for number, fact, later in sorted(facts, key=lambda item: item[0])
    ]


def reconcile(prompt: str) -> list[dict[str, Any]]:
    """NOOP for a fact already stored, DELETE the stored fact a new one contradicts
    (the same key), ADD the rest."""
    stored_part, new_part = prompt.split("New facts", 1)
    stored = {
        BY_TEXT[text].key if text in BY_TEXT else text: (int(number), text)
        for number, _, text in LISTED.findall(stored_part.split("Stored facts", 1)[-1])
    }
    decisions = []
    for number, _, text in LISTED.findall(new_part.split("For every new fact", 1)[0]):
        fact = BY_TEXT[text]
        found = stored.get(fact.key)
        if found is not None and found[1] == text:
            decision = {"event": "NOOP", "id": found[0], "text": None, "categories": None}
        elif found is not None:
            decision = {
                "event": "DELETE",
                "id": found[0],
                "text": text,
                "categories": list(fact.categories),
            }
        else:
            decision = {
                "event": "ADD",
                "id": None,
                "text": text,
                "categories": list(fact.categories),
            }
        decisions.append({"new_fact": int(number), **decision, "reason": "scripted"})
    return decisions
