"""The packages to install: liz's own, found, and the repository's middleware/ and agents/.

middleware/ and agents/ stay at the repository root and install as liz.middleware and
liz.agents, never as top-level packages that a user's own middleware.py or agents/
folder, or OpenAI's `agents` SDK, would collide with. pyproject.toml takes either a
found list or a written one, not both, hence this file; the rest is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = {"liz.middleware": "middleware", "liz.agents": "agents"}

setup(packages=[*find_packages(include=["liz", "liz.*"]), *MAPPED], package_dir=MAPPED)
