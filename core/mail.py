"""Django's console mail backend, writing on stderr: a command's stdout is its document (`--json`), never mail."""

import sys

from django.core.mail.backends import console


class EmailBackend(console.EmailBackend):
    """`consolemail://` (the default EMAIL_URL): an alert raised while `verify_manifests --json` runs is mailed to
    the log, where the console backend's stdout would have put it in front of the JSON a script reads."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("stream", sys.stderr)  # looked up per connection: a test's captured stderr is seen
        super().__init__(*args, **kwargs)
