"""Fixtures live in tests/fixtures/, one module per area."""

import os

# Tests about something else learn right after each reply, as they were written for;
# the tests of learning per burst set their idle time themselves.
os.environ.setdefault("LIZ_LEARN_AFTER_IDLE", "0")

pytest_plugins = [
    "tests.fixtures.llm",
    "tests.fixtures.db",
    "tests.fixtures.app",
    "tests.fixtures.facts",
]
