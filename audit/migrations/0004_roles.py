"""Create the role groups. Permissions are created first: on a fresh database they do not exist yet."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from audit.operations.roles import ensure_roles


def create_roles(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, verbosity=0, apps=apps)
        app_config.models_module = None
    ensure_roles(apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"))


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_retention_activity_review"),
        ("extraction", "0002_switch_attempt_target_replay"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
