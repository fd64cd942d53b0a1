"""The playground in a real browser: Debian's Chromium driven by Playwright, against a
real ``liz serve`` process and the scripted LLM.

Screenshots land in tests/output/ (git ignores it); their paths are printed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.fixtures.facts import decision, extraction, fact, plan
from tests.serve_process import liz_serve

pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")
OUTPUT = Path(__file__).parent / "output"
AGENT = "business-advisor"
TEA = "User loves to drink green tea"
# This sandbox: no GPU, no network but loopback, nothing kept between runs.
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed at /usr/bin/chromium and `make test` could not install it "
        "(apt-get install chromium); the browser test needs it",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


def pretend_model(request: RecordedRequest) -> Any:
    """The LLM behind the scripted server: learns one fact, answers in a few words."""
    if request.schema_name == "ExtractedFacts":
        said = request.prompt.split("<LATEST_EXCHANGE>")[-1]
        if "I love to drink green tea" in said:
            return extraction(fact(TEA, "user", "preferences", "drinks"))
        return extraction()
    if request.schema_name == "ReconcilePlan":
        return plan(decision(1, "ADD", text=TEA, categories=("preferences", "drinks")))
    return "Good question: start with your margins, then your prices."


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    server = ScriptedOpenAI(stream_pause=0.01)  # so the page gets the reply in pieces
    server.respond_with(pretend_model)
    with server.serve() as base_url:
        yield base_url


def serve_env(scripted_url: str, folder: Path, **more: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": scripted_url,
        "OPENAI_API_KEY": "test",
        "DATABASE_URL": f"file:{folder / 'playground.db'}",
        "LIZ_LLM_MAX_RETRIES": "0",
        **more,
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium with a fresh profile: Playwright's launch() gives it a new temporary
    user-data dir and deletes it on close."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def screenshot(page: Page, name: str) -> Path:
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / name
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def send(page: Page, text: str) -> None:
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send").click()


def region(page: Page, name: str) -> Any:
    return page.get_by_role("region", name=name, exact=True)


WATCH_REPLIES = """() => {
  // Every piece of text the replies show, in order: a streamed reply arrives in pieces.
  window.shownTexts = [];
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.TEXT_NODE && node.parentElement.closest('.agent')) {
          window.shownTexts.push(node.nodeValue);
        }
      }
    }
  }).observe(document.getElementById('messages'), {childList: true, subtree: true});
}"""


def test_chat_see_the_prompt_learn_recall_and_retire_a_fact(
    page: Page, scripted_url: str, tmp_path: Path
) -> None:
    with liz_serve(serve_env(scripted_url, tmp_path), tmp_path) as url:
        page.goto(f"{url}/playground")
        expect(page.get_by_role("combobox", name="Agent")).to_have_value(AGENT)
        page.get_by_role("textbox", name="User id").fill("ada")
        page.get_by_role("textbox", name="User id").dispatch_event("change")
        page.evaluate(WATCH_REPLIES)

        send(page, "Where should my bakery start?")
        conversation = region(page, "Conversation")
        reply = "Good question: start with your margins, then your prices."
        expect(conversation.locator(".agent p.done")).to_have_text(reply)
        *pieces, whole = page.evaluate("window.shownTexts")
        assert len(pieces) > 3, f"the reply came whole, not streamed in pieces: {pieces}"
        assert "".join(pieces) == whole == reply

        prompt = region(page, "Prompt")
        expect(prompt).to_contain_text("Where should my bakery start?")
        expect(prompt).to_contain_text("system")
        route = region(page, "Route")
        expect(route).to_contain_text("conversation")
        expect(route).to_contain_text("Only route")
        expect(region(page, "Steps")).to_contain_text("recall_facts.recall")

        send(page, "I love to drink green tea.")
        facts = region(page, "Facts")
        expect(facts).to_contain_text(TEA)
        expect(facts.get_by_text("History (1)")).to_be_visible()

        send(page, "Which tea should I drink today?")
        recalled = region(page, "Recalled facts")
        expect(recalled).to_contain_text(TEA)
        expect(recalled).to_contain_text(re.compile(r"score (0|1)\.\d{3}"))
        screenshot(page, "playground-desktop.png")

        facts.get_by_role("button", name=f"Retire: {TEA}").click()
        expect(facts.locator(".fact.retired")).to_contain_text(TEA)
        expect(facts.get_by_role("button", name=f"Retire: {TEA}")).to_have_count(0)
        facts.get_by_text("History (2)").click()
        expect(facts).to_contain_text("DELETE")

        page.set_viewport_size(PHONE)
        region(page, "Conversation").scroll_into_view_if_needed()
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
        screenshot(page, "playground-phone.png")


def test_the_facts_panel_says_when_learning_is_pending(
    page: Page, scripted_url: str, tmp_path: Path
) -> None:
    env = serve_env(scripted_url, tmp_path) | {"LIZ_LEARN_AFTER_IDLE": "3600"}
    with liz_serve(env, tmp_path) as url:
        page.goto(f"{url}/playground")
        page.get_by_role("textbox", name="User id").fill("ada")
        page.get_by_role("textbox", name="User id").dispatch_event("change")
        send(page, "I love to drink green tea.")
        facts = region(page, "Facts")
        expect(facts).to_contain_text("Learning pending: 1 message waiting")
        expect(facts).to_contain_text("quiet for 3600 s")
        expect(facts).to_contain_text("No facts about this user yet.")


def test_with_an_api_key_the_page_asks_for_it_and_keeps_it_in_the_tab(
    browser: Browser, scripted_url: str, tmp_path: Path
) -> None:
    env = serve_env(scripted_url, tmp_path, LIZ_API_KEY="s3cret-key")
    with liz_serve(env, tmp_path) as url:
        refused = httpx.get(f"{url}/playground")
        assert refused.status_code == 401
        assert "Conversation" not in refused.text and "s3cret-key" not in refused.text
        assert httpx.get(f"{url}/agents").status_code == 401

        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.set_default_timeout(20_000)
        response = page.goto(f"{url}/playground")
        assert response is not None and response.status == 401
        key_box = page.get_by_label("API key")
        key_box.fill("wrong-key")
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_role("alert")).to_contain_text("That key was refused")

        key_box.fill("s3cret-key")
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_role("combobox", name="Agent")).to_have_value(AGENT)
        send(page, "Hello with a key")
        expect(region(page, "Conversation").locator(".agent p.done")).to_contain_text("margins")
        expect(region(page, "Prompt")).to_contain_text("Hello with a key")
        assert page.evaluate("sessionStorage.getItem('liz-api-key')") == "s3cret-key"
        assert page.evaluate("document.cookie") == ""
        screenshot(page, "playground-key.png")

        page.reload()  # the tab still holds the key: straight back in
        expect(page.get_by_role("combobox", name="Agent")).to_have_value(AGENT)

        other_tab = context.new_page()  # another tab has to ask again
        other_tab.goto(f"{url}/playground")
        expect(other_tab.get_by_label("API key")).to_be_visible()
        context.close()


def test_the_api_page_reads_offline(page: Page, scripted_url: str, tmp_path: Path) -> None:
    with liz_serve(serve_env(scripted_url, tmp_path), tmp_path) as url:
        outside: list[str] = []
        page.on("request", lambda r: None if r.url.startswith(url) else outside.append(r.url))
        page.goto(f"{url}/docs")
        expect(page.get_by_role("heading", name="POST /agent/input")).to_be_visible()
        expect(page.locator("#schema-Trace")).to_contain_text("llmCalls")
        page.goto(f"{url}/playground")
        expect(page.get_by_role("combobox", name="Agent")).to_have_value(AGENT)
        assert outside == []
