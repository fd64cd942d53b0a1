"""The facts ``bench/memory.py`` stores and the questions it searches with: distinct
facts about one user, as extraction writes them."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

RELATIONS = ("sister", "brother", "mother", "father", "friend", "colleague", "neighbour")
RELATIONS += ("cousin", "partner", "daughter", "son", "boss")
NAMES = [
    "Mia",
    "Ola",
    "Sofia",
    "Jonas",
    "Aisha",
    "Lucas",
    "Emma",
    "Noah",
    "Lea",
    "Omar",
    "Ines",
    "Kenji",
    "Maya",
    "Tariq",
    "Elin",
]
NAMES += [
    "Rosa",
    "Ivan",
    "Nora",
    "Amir",
    "Clara",
    "Diego",
    "Hana",
    "Yusuf",
    "Lina",
    "Mateo",
    "Zara",
    "Felix",
    "Anya",
    "Theo",
    "Sara",
]
NAMES += ["Pia", "Ravi", "Ida", "Kofi", "Vera", "Luis", "Mina", "Otto", "Leila", "Sven"]
CITIES = [
    "Oslo",
    "Lisbon",
    "Kyoto",
    "Nairobi",
    "Lima",
    "Toronto",
    "Prague",
    "Hanoi",
    "Dublin",
    "Quito",
    "Seoul",
    "Porto",
]
CITIES += ["Bergen", "Lyon", "Austin", "Accra", "Tartu", "Cusco", "Malmo", "Split"]
JOBS = ("nurse", "carpenter", "teacher", "pilot", "baker", "lawyer", "chef", "architect")
JOBS += ("plumber", "journalist", "dentist", "farmer")
FOODS = ("peanuts", "shellfish", "gluten", "lactose", "sesame", "kiwi", "eggs", "soy")
LIKES = ("green tea", "sourdough", "ramen", "dark chocolate", "figs", "espresso", "curry")
LIKES += ("tapas", "dumplings", "oat porridge")
HOBBIES = ("tennis", "chess", "climbing", "the cello", "football", "bridge", "badminton")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SUBJECTS = ("law", "medicine", "music", "physics", "design", "history", "nursing", "economics")
MONTHS = ("January", "March", "May", "July", "September", "November")
QUERIES = (
    "what should I cook for my sister tonight?",
    "any gift ideas for my brother's birthday?",
    "is it worth visiting Oslo in winter?",
    "how do I get ready for my tennis match on Saturday?",
    "can you suggest a snack I can eat, given my allergies?",
    "what do you remember about my mother?",
    "my colleague is moving, where to again?",
    "I need a restaurant for my partner and me, ideas?",
    "what's a good present for a nurse?",
    "remind me what my cousin does for a living",
    "should I bring dumplings to the party?",
    "who in my family lives in Lisbon?",
    "plan a weekend trip to see my friend",
    "what tea would I like?",
    "help me write a card for my boss",
    "when is my daughter's birthday?",
)


def facts(count: int) -> list[str]:
    """``count`` distinct facts about one user, as extraction writes them, shuffled."""

    def every() -> Iterator[str]:
        for relation, name, city in itertools.product(RELATIONS, NAMES, CITIES):
            yield f"User's {relation} {name} lives in {city}"
        for relation, name, job in itertools.product(RELATIONS, NAMES, JOBS):
            yield f"User's {relation} {name} works as a {job}"
        for relation, name, month in itertools.product(RELATIONS, NAMES, MONTHS):
            yield f"User's {relation} {name} has a birthday in {month}"
        for relation, name, hobby, day in itertools.product(RELATIONS, NAMES, HOBBIES, DAYS):
            yield f"User plays {hobby} with their {relation} {name} on {day}s"
        for relation, name, food in itertools.product(RELATIONS, NAMES, FOODS):
            yield f"User's {relation} {name} is allergic to {food}"
        for relation, name, food in itertools.product(RELATIONS, NAMES, LIKES):
            yield f"User's {relation} {name} loves {food}"
        for relation, name, subject, city in itertools.product(RELATIONS, NAMES, SUBJECTS, CITIES):
            yield f"User's {relation} {name} studies {subject} in {city}"

    found = list(itertools.islice(every(), count))
    if len(found) < count:
        raise SystemExit(f"the fact generator makes {len(found):,} facts; {count:,} were asked for")
    random.Random(3).shuffle(found)
    return found
