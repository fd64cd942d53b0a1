"""Take the docs' screenshots with Debian's Chromium (the browser test's), through Playwright.

    .venv/bin/python docs/assets/take_screenshots.py playground   # docs/assets/playground.png
    .venv/bin/python docs/assets/take_screenshots.py docs-home    # docs/assets/docs-home.png

The playground one runs `liz serve` against the scripted model (its answers are written
below) and has a short conversation; the docs one serves the built site (`make docs-build`).
"""

from __future__ import annotations

import http.server
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI  # noqa: E402
from tests.serve_process import free_port, liz_serve  # noqa: E402

ASSETS = ROOT / "docs" / "assets"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 800}
TEA = "User runs a bakery and loves green tea"


def scripted(request: RecordedRequest) -> Any:
    if request.schema_name == "ExtractedFacts":
        if "bakery" in request.prompt.split("<LATEST_EXCHANGE>")[-1]:
            return {"facts": [{"text": TEA, "subject": "user", "categories": ["work", "drinks"]}]}
        return {"facts": []}
    if request.schema_name == "ReconcilePlan":
        return {"decisions": []}
    if "price" in request.prompt.split("<CURRENT_USER_INPUT>")[-1]:
        return (
            "(scripted) Before raising prices, work out your margin per loaf. If it is under "
            "60%, raise the two best sellers by 5% this Friday and watch next week's sales."
        )
    return "(scripted) Start with your margins: what does one loaf cost you to bake?"


def playground(page: Page) -> None:
    server = ScriptedOpenAI(stream_pause=0.01)
    server.respond_with(scripted)
    with tempfile.TemporaryDirectory() as folder, server.serve() as base_url:
        env = {"OPENAI_BASE_URL": base_url, "DATABASE_URL": f"file:{folder}/shot.db"}
        with liz_serve(env, Path(folder)) as url:
            page.goto(f"{url}/playground")
            page.get_by_role("textbox", name="User id").fill("ann")
            page.get_by_role("textbox", name="User id").dispatch_event("change")
            for text in [
                "I run a bakery and I love green tea.",
                "Should my bakery raise the price of green tea?",
            ]:
                page.get_by_role("textbox", name="Message").fill(text)
                page.get_by_role("button", name="Send").click()
                expect(page.locator(".agent p.done").last).to_contain_text("(scripted)")
                known = page.get_by_role("region", name="Facts", exact=True)
                expect(known).to_contain_text(TEA)  # learned after the first reply
            facts = page.get_by_role("region", name="Recalled facts", exact=True)
            expect(facts).to_contain_text(TEA)
            page.screenshot(path=str(ASSETS / "playground.png"))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request."""


def docs_home(page: Page) -> None:
    site = ROOT / ".site"
    handler = partial(QuietHandler, directory=str(site))
    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{port}/")
        page.screenshot(path=str(ASSETS / "docs-home.png"))
    finally:
        httpd.shutdown()


def main() -> None:
    shots = {"playground": playground, "docs-home": docs_home}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(30_000)
        for name in sys.argv[1:] or list(shots):
            shots[name](page)
            print(f"wrote docs/assets/{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
