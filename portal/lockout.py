"""Whom django-axes counts failed logins against: the username and the caller's address."""

from django.conf import settings


def client_address(request) -> str:
    """The caller's address, as the nearest of PAGETRAIL_PROXY_COUNT trusted proxies saw it.

    Behind a proxy REMOTE_ADDR is the proxy's for everyone, so a lockout would follow the username alone and a
    stranger could lock anyone out. Only entries our own proxies appended (the rightmost) are trusted: the
    caller writes whatever it likes to the left of them.
    """
    hops = settings.PAGETRAIL_PROXY_COUNT
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if hops and len(forwarded) >= hops:
        return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "")
