"""A bundle's rounds: the first, an account's own, a re-extraction, each numbered by one rule."""

import pytest

from extraction.accounts import ServiceAccount
from extraction.intake import decision, staging
from extraction.intake.rounds import InputGone, next_generation, request_reextraction
from extraction.models import Bundle, Job
from tests import pdfs

pytestmark = pytest.mark.django_db


def sent(path, account=None) -> Job:
    with open(path, "rb") as fh:
        staged = staging.stage(fh, filename=path.name, submitted_by="tester")
    submission = staging.receive(staged, filename=path.name, submitted_by="tester", account=account, queued=False)
    return decision.decide_here(submission).job


def test_it_numbers_every_round_after_the_newest_whoever_starts_it(tmp_path):
    path = pdfs.jpeg_rgb(tmp_path)
    first = sent(path)
    again = request_reextraction(first.bundle)
    own = sent(path, account=ServiceAccount.objects.create(name="contracts"))
    last = request_reextraction(first.bundle)
    assert [job.generation for job in (first, again, own, last)] == [0, 1, 2, 3]
    assert next_generation(first.bundle) == 4


def test_it_gives_the_first_round_to_an_account_whose_bytes_nobody_sent(tmp_path):
    job = sent(pdfs.jpeg_rgb(tmp_path), account=ServiceAccount.objects.create(name="contracts"))
    assert job.generation == 0 and job.account.name == "contracts"


def test_it_refuses_a_reextraction_once_the_input_is_gone(tmp_path):
    bundle = sent(pdfs.jpeg_rgb(tmp_path)).bundle
    Bundle.objects.filter(pk=bundle.pk).update(input_deleted_at=bundle.created_at)
    bundle.refresh_from_db()
    with pytest.raises(InputGone):
        request_reextraction(bundle)
    assert Job.objects.count() == 1
