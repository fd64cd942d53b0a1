"""Which image URLs liz hands to an LLM provider: public http(s) images and inline images.

The provider (or a local model server) fetches an ``http(s)`` URL itself, so a URL
that points at loopback, a private network, a link-local address (where cloud
metadata services live) or a local-only name would make it fetch from places the
sender cannot reach. Hosts are judged as written, without DNS: literal addresses in
every form (``127.1``, ``0x7f000001``, ``[::ffff:127.0.0.1]``) and names that only
mean something locally (``localhost``, ``*.internal``, names without a dot). A public
name that resolves to a private address is not caught here; see the README.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

MAX_IMAGE_URLS = 10
MAX_URL_LENGTH = 2_048
# An inline image of about 500 KiB; the request body limit is 1 MB.
MAX_DATA_URL_LENGTH = 700_000

DATA_IMAGE_TYPES = ("png", "jpeg", "jpg", "gif", "webp")
_DATA_URL = re.compile(
    r"data:image/(?P<type>[a-z0-9.+-]+)(?:;[a-z0-9=._-]+)*;base64,(?P<data>[A-Za-z0-9+/]*={0,2})",
    re.IGNORECASE,
)
_LOCAL_NAMES = ("localhost", "localdomain", "local", "internal", "intranet", "lan", "home.arpa")
_NUMERIC_LABEL = re.compile(r"(0x[0-9a-f]*|[0-9]+)", re.IGNORECASE)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Space, controls, backslash (read as "/" by browsers but not by Python) and quotes.
_UNSAFE_CHARACTER = re.compile(r"[\s\x00-\x1f\x7f\\\"'<>`]")


def image_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an image to show the LLM, or None when it is fine."""
    if not url.strip():
        return "is blank; give an http(s) URL or a data:image/... URL"
    if url[:5].lower() == "data:":
        return _data_url_problem(url)
    if len(url) > MAX_URL_LENGTH:
        return f"is {len(url)} characters long; at most {MAX_URL_LENGTH} are accepted"
    if _UNSAFE_CHARACTER.search(url):
        return "contains spaces, control characters, quotes or backslashes; percent-encode them"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"{parts.scheme}:" if parts.scheme else "no scheme"
        return f"has {scheme}; only http(s) and data:image/... URLs are accepted"
    if "@" in parts.netloc:
        return "has a user name or password in it; remove the part before @"
    if not parts.hostname:
        return "has no host"
    return _host_problem(parts.hostname)


def _data_url_problem(url: str) -> str | None:
    if len(url) > MAX_DATA_URL_LENGTH:
        return (
            f"is an inline image of {len(url)} characters; at most {MAX_DATA_URL_LENGTH} are "
            "accepted (link to a larger image instead)"
        )
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return "is not a base64 image (write data:image/png;base64,...)"
    if match["type"].lower() not in DATA_IMAGE_TYPES:
        return f"is an image/{match['type']}; inline images may be {', '.join(DATA_IMAGE_TYPES)}"
    if not match["data"]:
        return "is an inline image without data"
    return None


def _host_problem(host: str) -> str | None:
    name = host.rstrip(".").lower()
    address = _literal_address(name)
    if isinstance(address, str):
        return address
    if address is not None:
        if not address.is_global or address.is_multicast:
            return (
                f"points at {address}, a loopback, private, link-local or reserved address; "
                "only public hosts are accepted"
            )
        return None
    labels = name.split(".")
    if len(labels) < 2:
        return f"points at {host!r}, a name without a dot that only a local network knows"
    if any(name == local or name.endswith("." + local) for local in _LOCAL_NAMES):
        return f"points at {host!r}, a name that only a local network knows"
    return None


def _literal_address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | str | None:
    """The address ``name`` spells, None for a host name, or a problem (as text)."""
    if ":" in name:  # the brackets of an IPv6 literal are gone by now
        if "%" in name:
            return "has an IPv6 zone; only public hosts are accepted"
        try:
            return _embedded_v4(ipaddress.IPv6Address(name))
        except ValueError:
            return "has an invalid IPv6 address"
    if not _NUMERIC_LABEL.fullmatch(name.rsplit(".", 1)[-1]):
        return None
    # A numeric last label makes browsers and most HTTP clients read the host as IPv4,
    # in any of its old forms (127.1, 0177.0.0.1, 2130706433); inet_aton reads them all.
    try:
        return ipaddress.IPv4Address(socket.inet_aton(name))
    except OSError:
        return "has a host that looks like an IPv4 address but is not one"


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address inside an IPv6 one that carries it (mapped, 6to4, Teredo, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address
