"""Existing service accounts survive the move to expiring tokens and scoped submissions."""

from datetime import timedelta

import pytest
from django.utils import timezone

from extraction.accounts import ServiceAccount, token_hash
from tests.migrating import migrate, migrate_latest

BEFORE = [("extraction", "0010_bundle_submit_and_download_permissions")]
AFTER = [("extraction", "0011_service_account_tokens_and_submissions")]
TOKEN = "pt_an-existing-token-issued-before-expiry-existed"


@pytest.fixture
def before_tokens_expired(transactional_db):
    apps = migrate(BEFORE)
    account = apps.get_model("extraction", "ServiceAccount").objects.create(
        name="claims-ingest", token_sha256=token_hash(TOKEN), token_prefix=TOKEN[:10]
    )
    bundle = apps.get_model("extraction", "Bundle").objects.create(
        correlation_id="a" * 64,
        size=1,
        page_count=1,
        mime="application/pdf",
        input_name=f"aa/{'a' * 64}.pdf",  # as intake names it (a later migration derives it)
        submitted_by="api:claims-ingest",
    )
    apps.get_model("extraction", "Job").objects.create(
        bundle=bundle,
        idempotency_key="k",
        provider="local",
        extractor="e",
        extractor_version="1",
        deadline=timezone.now(),
    )
    yield account
    migrate_latest()  # the other tests' schema again


def test_it_keeps_an_existing_token_valid_with_an_expiry(before_tokens_expired, settings):
    migrate(AFTER)
    # Then every later migration, as a deployment runs them: the model read below is today's (its webhook columns).
    migrate_latest()
    account = ServiceAccount.objects.get()
    expires = account.tokens.get().expires_at
    assert ServiceAccount.for_token(TOKEN) == account
    assert abs(expires - (timezone.now() + timedelta(days=settings.PAGETRAIL_TOKEN_DAYS))) < timedelta(minutes=5)


def test_it_makes_each_existing_api_bundle_its_submitters_submission(before_tokens_expired):
    # The model as it was then (renamed BundleAccess later, when Submission came to mean an upload in intake).
    submission = migrate(AFTER).get_model("extraction", "Submission").objects.get()
    assert (submission.account.name, submission.bundle.submitted_by) == ("claims-ingest", "api:claims-ingest")
