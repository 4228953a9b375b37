"""Who is asking: the one client address that the login lockout, the API's throttles and the access log all use."""

from django.conf import settings


def client_address(request_or_environ) -> str:
    """The caller's address, as the outermost of PAGETRAIL_PROXY_COUNT trusted proxies saw it.

    Takes a request (django-axes, the throttles) or a WSGI environ (gunicorn's access log). With no proxy
    (0) X-Forwarded-For is ignored: the caller writes it. Behind n proxies REMOTE_ADDR is a proxy's for everyone,
    and only the entries our own proxies appended (the rightmost n) are trusted: the n-th from the right is the
    caller's. A header with fewer entries than that did not come through our proxies.
    """
    meta = getattr(request_or_environ, "META", request_or_environ)
    hops = settings.PAGETRAIL_PROXY_COUNT
    forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if hops and len(forwarded) >= hops:
        return forwarded[-hops]
    return meta.get("REMOTE_ADDR", "")
