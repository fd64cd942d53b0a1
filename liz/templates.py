"""The old import path of :mod:`liz.prompts.templates`, kept for apps that use it."""

from liz.prompts.templates import *  # noqa: F403
