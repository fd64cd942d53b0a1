"""Read a settings class from the environment; a bad value is one line naming its variable.

>>> from liz.config import ServerSettings
>>> load_settings(ServerSettings, server_port="abc")
Traceback (most recent call last):
...
liz.errors.UsageError: bad setting SERVER_PORT='abc': Input should be a valid integer, ...
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from liz.errors import UsageError

S = TypeVar("S", bound=BaseSettings)


def load_settings(cls: type[S], **overrides: Any) -> S:
    """``cls(**overrides)``, with environment and ``.env`` values under the overrides.

    A value given in ``overrides`` (a command-line flag) is never read from the
    environment, so a bad environment value it replaces does not fail.
    """
    try:
        return cls(**overrides)
    except ValidationError as exc:
        raise UsageError(describe_settings_error(_failed_branch(cls, exc), exc)) from None


def describe_settings_error(cls: type[BaseSettings], exc: ValidationError) -> str:
    prefix = str(cls.model_config.get("env_prefix", "")).upper()
    lines = []
    for problem in exc.errors():
        field = str(problem["loc"][0]) if problem["loc"] else ""
        if not field:
            name = prefix.rstrip("_") or cls.__name__
        else:  # an alias (LIZ_LEARN_BATCH) is the variable's whole name
            name = f"{prefix}{field.upper()}" if field in cls.model_fields else field.upper()
        given = problem.get("input")
        secret = field in cls.model_fields and "SecretStr" in str(
            cls.model_fields[field].annotation
        )
        shown = f"={given!r}" if isinstance(given, str | int | float | bool) and not secret else ""
        allowed = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"bad setting {name}{shown}: {allowed}")
    return "\n".join(lines)


def _failed_branch(cls: type[BaseSettings], exc: ValidationError) -> type[BaseSettings]:
    """The settings class whose value failed: the root or one of its branches (each
    branch is read on its own, with its own prefix)."""
    for field in cls.model_fields.values():
        branch = field.annotation
        if isinstance(branch, type) and issubclass(branch, BaseSettings):  # noqa: SIM102
            if branch.__name__ == exc.title:
                return branch
    return cls
