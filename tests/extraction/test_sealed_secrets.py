"""Webhook signing secrets are sealed at rest (core/sealed.py): the column never holds one, the portal reads it
back, a SECRET_KEY rotated with its fallback or a dedicated PAGETRAIL_SECRETS_KEY loses nothing, and the
migration seals the secrets already kept."""

import pytest
from django.db import connection

from core import sealed
from extraction.accounts import ServiceAccount
from tests.migrating import migrate, migrate_latest

BEFORE = [("extraction", "0025_webhook_url_check")]
AFTER = [("extraction", "0026_sealed_webhook_secrets")]
OLD_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def columns(pk: int) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "select webhook_secret, webhook_previous_secret from extraction_serviceaccount where id = %s", [pk]
        )
        return cursor.fetchone()


@pytest.mark.django_db
def test_the_column_holds_no_secret_and_the_portal_reads_it_back():
    account = ServiceAccount.objects.create(name="claims")
    first = account.issue_webhook_secret()
    second = account.issue_webhook_secret()
    stored = columns(account.pk)
    assert all(first not in column and second not in column and "whsec_" not in column for column in stored)
    again = ServiceAccount.objects.get(pk=account.pk)
    assert (again.webhook_secret, again.webhook_previous_secret) == (second, first)
    assert ServiceAccount.objects.exclude(webhook_secret="").get() == account


@pytest.mark.django_db
def test_a_rotated_secret_key_opens_with_its_fallback_and_says_so_without(settings):
    account = ServiceAccount.objects.create(name="claims")
    secret = account.issue_webhook_secret()
    settings.SECRET_KEY_FALLBACKS, settings.SECRET_KEY = [settings.SECRET_KEY], "a-new-secret-key" * 4
    assert ServiceAccount.objects.get(pk=account.pk).webhook_secret == secret
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(sealed.Unreadable, match="opens under no configured key"):
        ServiceAccount.objects.get(pk=account.pk)


@pytest.mark.django_db
def test_a_dedicated_key_seals_new_secrets_and_still_opens_older_ones(settings):
    older = ServiceAccount.objects.create(name="older")
    old = older.issue_webhook_secret()
    settings.PAGETRAIL_SECRETS_KEY = "a-dedicated-key-of-this-deployment"
    newer = ServiceAccount.objects.create(name="newer")
    new = newer.issue_webhook_secret()
    assert ServiceAccount.objects.get(pk=older.pk).webhook_secret == old
    settings.SECRET_KEY = "another-secret-key" * 4  # the dedicated key alone opens what it sealed
    assert ServiceAccount.objects.get(pk=newer.pk).webhook_secret == new


@pytest.fixture
def before_sealing(transactional_db):
    accounts = migrate(BEFORE).get_model("extraction", "ServiceAccount")
    kept = accounts.objects.create(name="claims", webhook_secret=OLD_SECRET, webhook_previous_secret=OLD_SECRET[:-1])
    accounts.objects.create(name="none")
    yield kept.pk
    migrate_latest()  # the other tests' schema again


def test_the_migration_seals_the_secrets_already_kept_and_unseals_them_going_back(before_sealing):
    assert columns(before_sealing) == (OLD_SECRET, OLD_SECRET[:-1])
    migrate(AFTER)
    assert all(
        "whsec_" not in column and sealed.unseal(column).startswith("whsec_") for column in columns(before_sealing)
    )
    migrate_latest()
    account = ServiceAccount.objects.get(pk=before_sealing)
    assert (account.webhook_secret, account.webhook_previous_secret) == (OLD_SECRET, OLD_SECRET[:-1])
    assert ServiceAccount.objects.get(name="none").webhook_secret == ""
    migrate(BEFORE)
    assert columns(before_sealing) == (OLD_SECRET, OLD_SECRET[:-1])
