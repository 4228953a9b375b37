from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from portal.settings import local_secret


class Command(BaseCommand):
    help = "Create the demo superuser 'admin' once (embedded profile) and print its credentials."

    def handle(self, *args, **options):
        password = local_secret("demo_admin_password")
        user, created = get_user_model().objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(password)
            user.save()
        state = "created" if created else "exists"
        self.stdout.write(
            f"Demo admin ({state}): user 'admin', password '{password}' "
            f"(kept in {settings.DATA_DIR / 'secrets'}; change it in the admin)"
        )
