"""The web console and the API's docs page: static files shipped in the package, served with a
strict CSP.

Plain HTML, CSS and JavaScript (no build step, nothing loaded from elsewhere) that talk to the
same `/api/` routes as any client. The page holds no secret: on a token-protected server it
reads the token from the URL fragment (`/#token=...`, never sent to the server) or asks for it,
keeps it in the tab's sessionStorage and sends it as `Authorization: Bearer` — which is why it
reads event streams with `fetch` rather than `EventSource` (which cannot send headers).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from ._routes import ApiRoute

ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8", "the web console"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8", "the console's script"),
    "/elicitation.js": (
        "elicitation.js",
        "text/javascript; charset=utf-8",
        "the console's forms for MCP servers' questions",
    ),
    "/treeview.js": (
        "treeview.js",
        "text/javascript; charset=utf-8",
        "the console's drawing of the tree",
    ),
    "/vendor/dagre.min.js": (
        "vendor/dagre.min.js",
        "text/javascript; charset=utf-8",
        "dagre 3.1.4 (MIT, shipped in the package): the drawing's layout",
    ),
    "/vendor/dagre.LICENSE.txt": (
        "vendor/dagre.LICENSE.txt",
        "text/plain; charset=utf-8",
        "dagre's licence",
    ),
    "/console.css": ("console.css", "text/css; charset=utf-8", "the console's and the docs' style"),
    "/docs": ("docs.html", "text/html; charset=utf-8", "this API's routes, read from /openapi.json"),
    "/docs.js": ("docs.js", "text/javascript; charset=utf-8", "the docs page's script"),
}

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data: blob:",  # blob: an image artifact, fetched with the token
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
"""Only the console's own files run; no inline script or style, no other origin, no framing.
An HTML artifact's iframe (`srcdoc`, sandboxed) inherits this policy: no script runs in it."""

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


@cache
def asset(filename: str) -> bytes:
    """The bytes of a console file (package data of `jianmu_like.server`)."""
    return (resources.files(__package__) / "static" / filename).read_bytes()


def console_routes() -> list[ApiRoute]:
    """`/` (the page), its script and style, and `/docs` (the API's routes) with its script."""

    def serve(path: str, filename: str, media_type: str, summary: str) -> ApiRoute:
        async def endpoint(_request: Request, _body: None) -> Response:
            return Response(asset(filename), media_type=media_type, headers=SECURITY_HEADERS)

        media = media_type.split(";")[0]
        return ApiRoute("GET", path, endpoint, summary, None, media_type=media, tag="console")

    return [serve(path, *entry) for path, entry in ASSETS.items()]
