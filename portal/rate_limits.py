"""Two budgets per caller on the API, counted in Django's cache, and the RateLimit fields that tell a caller where it
stands in the one its request spent (draft-ietf-httpapi-ratelimit-headers-11)."""

import math
import time
from dataclasses import dataclass

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from ninja.throttling import BaseThrottle, SimpleRateThrottle

from portal.clients import client_address

# Reading changes nothing: GET (and HEAD, which the API answers as GET) and OPTIONS spend the read budget.
READING = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Standing:
    """Where a caller stands in one budget after its request was counted (or refused)."""

    policy: str
    quota: int
    window: int
    remaining: int
    reset: int  # seconds until the oldest request counted leaves the window (and one more may pass)


class Budget(SimpleRateThrottle):
    """One named quota per service account (per client address without one), in a sliding window.

    ninja's own `allow_request` keeps the history on the throttle, which every thread of a process shares: here it
    stays in the request, and the 429 handler reads `request.rate_limit` for Retry-After.
    """

    def __init__(self, policy: str, rate: str):
        self.scope, self.policy = policy, policy
        super().__init__(rate)

    def clock(self) -> float:
        return time.time()  # a method, so a test can move the clock of one budget

    def get_cache_key(self, request: HttpRequest) -> str:
        # ninja's address would be the raw X-Forwarded-For, which the caller writes: a new header on each request
        # would make each one a new caller.
        auth = getattr(request, "auth", None)
        ident = f"account-{auth.pk}" if auth is not None else client_address(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request: HttpRequest) -> bool:
        key, now = self.get_cache_key(request), self.clock()
        quota, window = self.num_requests or 0, self.duration or 1
        history = [at for at in self.cache.get(key, []) if at > now - window]  # newest first
        allowed = len(history) < quota
        if allowed:
            history.insert(0, now)
            self.cache.set(key, history, window)
        reset = math.ceil(history[-1] + window - now) if history else 0
        request.rate_limit = Standing(self.policy, quota, window, max(0, quota - len(history)), max(reset, 0))  # type: ignore[attr-defined]
        return allowed

    def wait(self) -> float | None:
        return None  # see the class docstring


class ClientRateThrottle(BaseThrottle):
    """Submissions (every request that changes something: today POST /bundles) spend one budget, polling reads
    another, larger one: a client following its jobs never runs out of room to submit."""

    def __init__(self, submissions: str, reads: str):
        self.submissions, self.reads = Budget("submissions", submissions), Budget("reads", reads)

    def budget_for(self, request: HttpRequest) -> Budget:
        return self.reads if request.method in READING else self.submissions

    def allow_request(self, request: HttpRequest) -> bool:
        return self.budget_for(request).allow_request(request)


def retry_after(request: HttpRequest) -> int:
    """Seconds until the refused caller's budget has room again (at least 1)."""
    standing = getattr(request, "rate_limit", None)
    return max(1, standing.reset) if standing is not None else 1


def declare_standing(request: HttpRequest, response: HttpResponseBase) -> None:
    """RateLimit-Policy and RateLimit on every answer to a request a budget counted, 2xx and 429 alike."""
    standing = getattr(request, "rate_limit", None)
    if standing is None:  # refused before the throttle ran (no token, an unknown route)
        return
    response["RateLimit-Policy"] = f'"{standing.policy}";q={standing.quota};w={standing.window}'
    response["RateLimit"] = f'"{standing.policy}";r={standing.remaining};t={standing.reset}'
