"""/static/ under `runserver --insecure` (as `make run` starts it) with the security headers of every other answer.

Django's development server serves static files from a handler of its own, around the portal's WSGI application and
outside its middleware. This one passes its answers through the middleware that sets response headers, so the
headers have one implementation. (In production the proxy serves STATIC_ROOT and sets its own; docs/web-server.md.)
"""

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.utils.module_loading import import_string

HEADER_MIDDLEWARE = (
    "django.middleware.security.SecurityMiddleware",  # nosniff, Referrer-Policy, Cross-Origin-Opener-Policy, HSTS
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
)


class StaticFilesWithHeaders(StaticFilesHandler):
    def load_middleware(self, is_async=False):
        answer = super().get_response  # the file, or a 404
        for path in reversed([name for name in settings.MIDDLEWARE if name in HEADER_MIDDLEWARE]):
            answer = import_string(path)(answer)
        self.answer_with_headers = answer

    def get_response(self, request):
        return self.answer_with_headers(request)
