"""What every response needs before it leaves for a network: no shared cache keeps it, and the
address login throttling counts is the client's, not the proxy's. And what every request
shares: the tally's version, read once."""

from django.conf import settings
from django.http import HttpRequest
from django.utils.cache import patch_cache_control

from sessionviewer import tallies


def private_cache(get_response):
    """Mark every response the app renders `Cache-Control: private`: pages, fragments, JSON and
    downloads hold transcripts and memory, and a shared cache (a proxy, a CDN) must never keep
    one user's for another. Static files are served by whitenoise before this runs."""

    def middleware(request: HttpRequest):
        response = get_response(request)
        patch_cache_control(response, private=True)
        return response

    return middleware


def tally_counts_per_request(get_response):
    """The tally's session counts (the list's facets and count) read at most once per request
    and kept by this process until they change (tallies.counts_kept_for_request)."""

    def middleware(request: HttpRequest):
        with tallies.counts_kept_for_request():
            return get_response(request)

    return middleware


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for django-axes. Behind a TLS proxy every request comes from the
    proxy, so the address is the last one in X-Forwarded-For: the one the proxy itself added
    (earlier ones are whatever the client sent, and could be forged)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.SESSIONVIEWER_BEHIND_TLS_PROXY and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR")
