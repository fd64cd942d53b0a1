"""The browser pages' routes and their one template folder.

Pages carry their CSS and JavaScript inline: a page fetched with the key (see
:mod:`liz.playground.gate`) cannot fetch more files with it, and nothing comes
from elsewhere, so the pages work offline. A Content-Security-Policy allows
exactly those inline blocks, by hash, and connections to this server only.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache, lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

PLAYGROUND = "/playground"
# Inline blocks a page may hold, rendered once: (template, kind) pairs.
INLINE_BLOCKS = {
    "playground_css": ("playground.css", "style"),
    "playground_js": ("playground.js", "script"),
    "key_prompt_js": ("key_prompt.js", "script"),
}


# Markdown as CommonMark, raw HTML in it shown as text (a description never adds markup).
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


@lru_cache(maxsize=1024)
def markdown(text: str) -> Markup:
    """``text`` (Markdown) as HTML blocks, rendered here: the page loads nothing else."""
    return Markup(_MARKDOWN.render(text))


@lru_cache(maxsize=1024)
def markdown_inline(text: str) -> Markup:
    """``text`` (Markdown) as inline HTML, for a table cell or a sentence."""
    return Markup(_MARKDOWN.renderInline(text))


@cache
def web_templates() -> Environment:
    env = Environment(
        loader=PackageLoader("liz.playground", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(markdown=markdown, markdown_inline=markdown_inline)
    return env


@cache
def inline_blocks() -> dict[str, Markup]:
    """The inline CSS and JavaScript, as the pages print them."""
    env = web_templates()
    return {
        name: Markup(env.get_template(file).render()) for name, (file, _) in INLINE_BLOCKS.items()
    }


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def security_headers() -> dict[str, str]:
    """Every page's headers: only our own inline blocks run, only this server is reached."""
    blocks = inline_blocks()
    hashes = {kind: [] for _, kind in INLINE_BLOCKS.values()}  # type: dict[str, list[str]]
    for name, (_, kind) in INLINE_BLOCKS.items():
        hashes[kind].append(_sha256(str(blocks[name])))
    policy = "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(hashes["script"]),
            "style-src " + " ".join(hashes["style"]),
            "connect-src 'self'",
            "img-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )
    return {
        "Content-Security-Policy": policy,
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }


def render_page(template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    html = web_templates().get_template(template).render(**inline_blocks(), **values)
    return HTMLResponse(html, status_code=status_code, headers=security_headers())


async def playground(request: Request) -> Response:
    """The page holds no data and no secret: everything it shows, it asks the API for."""
    return render_page("playground.html")


def playground_routes() -> list[BaseRoute]:
    return [Route(PLAYGROUND, playground, methods=["GET"])]


FAVICON = "/favicon.ico"
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="7" fill="#3a5a8c"/>'
    '<path d="M10 6v20h13v-4h-9V6z" fill="#fff"/></svg>'
)


async def favicon(request: Request) -> Response:
    """The icon browsers ask every page of this server for (SVG, whatever the name says)."""
    return Response(
        ICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"}
    )


def favicon_routes() -> list[BaseRoute]:
    return [Route(FAVICON, favicon, methods=["GET"])]
