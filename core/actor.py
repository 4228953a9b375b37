"""Who is acting: the signed-in user of the request being handled, for records written by signal handlers
(a group membership changed) that see only the objects, never the request."""

from contextvars import ContextVar

SYSTEM = "system"  # a management command, a worker, the shell
_actor: ContextVar[str] = ContextVar("pagetrail_actor", default=SYSTEM)


def current() -> str:
    return _actor.get()


class ActorMiddleware:
    """After authentication: the request's user is the actor of whatever the request changes."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        token = _actor.set(user.get_username() if user is not None and user.is_authenticated else "anonymous")
        try:
            return self.get_response(request)
        finally:
            _actor.reset(token)
