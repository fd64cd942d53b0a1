"""The API reference, as a reader gets it from ``mkdocs build``: what a middleware author
touches is there, and docstrings' Sphinx roles are links or code, never raw roles."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    site = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    return (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "entry",
    [
        "liz.pipeline.AgentResponse.reply",
        "liz.pipeline.AgentResponse.send",
        "liz.pipeline.AgentResponse.error",
        *(f"liz.pipeline.AgentRequest.{name}" for name in ("input", "memories", "facts", "state")),
    ],
)
def test_the_reference_documents_what_a_middleware_touches(reference: str, entry: str) -> None:
    assert f'id="{entry}"' in reference


def test_the_reference_shows_no_raw_sphinx_role_and_links_documented_ones(reference: str) -> None:
    text = re.sub(r"<[^>]+>", "", reference)
    raw = re.findall(r":(?:mod|class|func|meth|attr|data|exc):`?", text)
    assert not raw, raw[:5]
    # AgentResponse.send's docstring names :class:`liz.errors.UsageError`, a documented entry.
    assert 'href="#liz.errors.UsageError"' in reference


@pytest.mark.parametrize(
    ("given", "address"), [((), "127.0.0.1:8000"), (("PORT=8123",), "127.0.0.1:8123")]
)
def test_make_docs_serves_on_the_port_asked_for(given: tuple[str, ...], address: str) -> None:
    planned = subprocess.run(
        ["make", "-n", "docs", *given],
        cwd=ROOT,
        env={name: value for name, value in os.environ.items() if name != "PORT"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert planned.returncode == 0, planned.stderr
    assert f"mkdocs serve --dev-addr {address}" in planned.stdout


def test_getting_started_names_no_extra_as_installed_by_default() -> None:
    """What "gets installed" lists before its extras is what `pip install liz-agents` gives."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    page = (ROOT / "docs" / "getting-started.md").read_text()
    default = page.split("## What gets installed, and why", 1)[1].split("Extras:", 1)[0]
    extras = {
        re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower()
        for name in ("postgres", "twitter", "twikit")
        for requirement in project["optional-dependencies"][name]
    }
    named = {word.lower() for word in re.findall(r"[\w-]+", default)}
    assert not extras & named, f"named as installed by default, but an extra: {extras & named}"
