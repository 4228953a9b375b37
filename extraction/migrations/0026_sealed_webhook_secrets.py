"""Webhook signing secrets sealed at rest: the columns widened for a Fernet token, every existing secret sealed in
place, then the fields become sealed ones (core/sealed.py). Reversible: unsealed again on the way back."""

from django.db import migrations, models

import core.sealed

FIELDS = ("webhook_secret", "webhook_previous_secret")


def convert(apps, schema_editor, change):
    accounts = apps.get_model("extraction", "ServiceAccount")
    for account in accounts.objects.exclude(webhook_secret="", webhook_previous_secret="").only("pk", *FIELDS):
        values = {name: change(getattr(account, name)) for name in FIELDS if getattr(account, name)}
        accounts.objects.filter(pk=account.pk).update(**values)


def seal_all(apps, schema_editor):
    convert(apps, schema_editor, core.sealed.seal)


def unseal_all(apps, schema_editor):
    convert(apps, schema_editor, core.sealed.unseal)


def widened(name):
    return migrations.AlterField(
        model_name="serviceaccount", name=name, field=models.CharField(blank=True, editable=False, max_length=200)
    )


def sealed(name):
    return migrations.AlterField(
        model_name="serviceaccount",
        name=name,
        field=core.sealed.SealedCharField(blank=True, editable=False, max_length=200),
    )


class Migration(migrations.Migration):
    dependencies = [("extraction", "0025_webhook_url_check")]

    operations = [
        *map(widened, FIELDS),
        migrations.RunPython(seal_all, unseal_all),
        *map(sealed, FIELDS),
    ]
