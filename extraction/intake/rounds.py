"""Which job a bundle's bytes are given: the first round, an account's own round, or a re-extraction, each
numbered by `next_generation`."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..models import Bundle, BundleAccess, Job, idempotency_key
from ..providers import get_provider
from . import queue


class InputGone(Exception):
    """The input was deleted under its retention policy: nothing left to extract from."""


def next_generation(bundle: Bundle) -> int:
    """The round after the bundle's newest; a bundle without a job starts at 0."""
    newest = Job.objects.filter(bundle=bundle).aggregate(n=Max("generation"))["n"]
    return 0 if newest is None else newest + 1


def job_for(bundle: Bundle, account_id: int | None, at, case_label: str = "") -> tuple[Job, bool]:
    """The job these bytes are given (and whether it is new, queued once the transaction commits); called inside
    the transaction that creates the bundle, so no job exists that an account cannot see."""
    provider = get_provider(settings.PAGETRAIL_PROVIDER)
    if account_id is None:
        job, created = Job.objects.get_or_create(
            idempotency_key=idempotency_key(bundle.correlation_id, provider.extractor, provider.version),
            defaults=_job_fields(bundle, provider, at),
        )
    else:
        job, created = _round_for_account(bundle, account_id, provider, at, case_label)
    if created:
        queue.run_after_commit(job.pk)
    return job, created


def first_job(bundle: Bundle, account_id: int | None, at, case_label: str = "") -> Job:
    """The first round of a bundle created in this same transaction, queued once it commits: no job or access
    is looked up first, since none can exist for a bundle nobody else sees yet."""
    provider = get_provider(settings.PAGETRAIL_PROVIDER)
    key = idempotency_key(bundle.correlation_id, provider.extractor, provider.version)
    job = Job.objects.create(idempotency_key=key, account_id=account_id, **_job_fields(bundle, provider, at))
    if account_id is not None:
        BundleAccess.objects.create(account_id=account_id, bundle=bundle, job=job, case_label=case_label, created_at=at)
    queue.run_after_commit(job.pk)
    return job


def _round_for_account(bundle: Bundle, account_id: int, provider, at, case_label: str) -> tuple[Job, bool]:
    """The job an account is given for these bytes: the one it was given before, else the first round if
    nobody has one yet, else a round of its own, so that its timings never show an earlier submitter."""
    access = BundleAccess.objects.filter(account_id=account_id, bundle=bundle).select_related("job").first()
    if access:
        return access.job, False
    job = _new_round(bundle, provider, at, account_id=account_id)
    BundleAccess.objects.create(account_id=account_id, bundle=bundle, job=job, case_label=case_label, created_at=at)
    return job, True


def request_reextraction(bundle: Bundle, at=None) -> Job:
    """A new job for the same bundle (same correlation id, next round, its own key and outputs)."""
    if bundle.input_deleted_at:
        raise InputGone(
            f"The input of {bundle.file_name} (bundle {bundle.correlation_id[:16]}) was deleted under its retention "
            "policy."
        )
    at, provider = at or timezone.now(), get_provider(settings.PAGETRAIL_PROVIDER)
    with transaction.atomic():
        job = _new_round(bundle, provider, at)
        queue.run_after_commit(job.pk)
    return job


def _new_round(bundle: Bundle, provider, at, account_id: int | None = None) -> Job:
    generation = next_generation(bundle)
    key = idempotency_key(bundle.correlation_id, provider.extractor, provider.version, generation)
    return Job.objects.create(
        idempotency_key=key, account_id=account_id, **_job_fields(bundle, provider, at, generation)
    )


def _job_fields(bundle: Bundle, provider, at, generation: int = 0) -> dict:
    return dict(
        bundle=bundle,
        provider=provider.name,
        extractor=provider.extractor,
        extractor_version=provider.version,
        generation=generation,
        enqueued_at=at,
        last_woken_at=at,
        deadline=at + timedelta(seconds=settings.PAGETRAIL_JOB_DEADLINE_SECONDS),
    )
