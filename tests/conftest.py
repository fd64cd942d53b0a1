"""Fixtures live in tests/fixtures/, one module per area."""

pytest_plugins = [
    "tests.fixtures.llm",
    "tests.fixtures.db",
    "tests.fixtures.app",
    "tests.fixtures.facts",
]
