import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django_application = get_wsgi_application()

from portal.bodies import LeaveUnreadBodies  # noqa: E402  (after Django is set up)

application = LeaveUnreadBodies(django_application)
