"""Where a preset's calls go, and the hosts a credential may be sent to.

A credential's secret leaves the process only in a request to its preset's host, so
the host is what a credential's `allowed_hosts` are compared with. Pure functions, no
database.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

# The vendors' own APIs, used when a preset has no base URL (the SDKs' defaults).
VENDOR_HOSTS = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
    "echo": "",  # offline: nothing is sent anywhere
}
MAX_HOST_PATTERNS = 20
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST_PATTERN = re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*", re.ASCII)


def destination_host(provider_name: str, base_url: str) -> str:
    """The host name a call goes to: the base URL's, else the vendor's; "" for echo."""
    if base_url.strip():
        try:
            return (urlsplit(base_url.strip()).hostname or "").lower()
        except ValueError:  # a malformed IPv6 literal: no host anything may match
            return ""
    return VENDOR_HOSTS.get(provider_name, "")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def validate_host_patterns(value: object) -> None:
    """A list of host names (`api.openai.com`), IP addresses, or `*.domain` for every
    subdomain of a domain; no scheme, port or path."""
    if not isinstance(value, list):
        raise ValidationError('Give a list of host names, e.g. ["api.openai.com"].')
    if len(value) > MAX_HOST_PATTERNS:
        raise ValidationError(f"At most {MAX_HOST_PATTERNS} hosts.")
    for index, pattern in enumerate(value):
        if not isinstance(pattern, str) or not (
            _is_ip(pattern) or (len(pattern) <= 253 and HOST_PATTERN.fullmatch(pattern))
        ):
            raise ValidationError(
                f"[{index}]: {pattern!r} is not a host name: give a lowercase name like api.openai.com or "
                "*.openai.azure.com (no scheme, port or path)."
            )


def host_matches(host: str, patterns: list[str]) -> bool:
    """Whether `host` is one of `patterns` (`*.example.com`: any subdomain of it)."""
    if not host:
        return False
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False
