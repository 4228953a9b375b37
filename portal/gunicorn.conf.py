"""gunicorn for the portal: `make serve`, or `gunicorn -c portal/gunicorn.conf.py portal.wsgi` (docs/web-server.md).

Sync workers, behind a TLS proxy that buffers requests (nginx does by default): a worker serves one request at
a time, and one held by a slow client is killed at `timeout` and replaced. Command-line options win over these.
"""

import multiprocessing
import os

from gunicorn.glogging import Logger

from portal.clients import client_address
from portal.settings import LOGGING

bind = os.environ.get("PAGETRAIL_WEB_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("PAGETRAIL_WEB_WORKERS", 2 * multiprocessing.cpu_count() + 1))
worker_class = "sync"
# A request (an upload of PAGETRAIL_MAX_UPLOAD_BYTES from the proxy included) finishes well within this;
# a worker silent for longer (a client sending its headers slowly, a hung call) is killed and replaced.
timeout = int(os.environ.get("PAGETRAIL_WEB_TIMEOUT", 60))
graceful_timeout = 30
# Request line and headers: what a browser or an API client sends, with room for long admin filter URLs.
limit_request_line = 8190
limit_request_fields = 50
limit_request_field_size = 8190
# Recycled now and then (not all at once), so a slow leak never grows a worker without bound.
max_requests = 1000
max_requests_jitter = 100
# The portal's own logging (one line a request, plain or JSON by PAGETRAIL_LOG_FORMAT): every line, the
# request line with its query string included, is scrubbed of tokens and secrets (core/logs.py).
logconfig_dict = LOGGING
# No control socket: it lives at one path in the home directory, which several instances on a host would share.
control_socket_disable = True
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms "%(a)s"'


class AccessLog(Logger):
    """%(h)s is the client address the throttles and the login lockout count by, not a proxy's REMOTE_ADDR."""

    def atoms(self, resp, req, environ, request_time):
        return {**super().atoms(resp, req, environ, request_time), "h": client_address(environ)}


logger_class = AccessLog
