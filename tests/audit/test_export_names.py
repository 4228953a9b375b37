"""Evidence packages are named after what they hold: the case, or the bundle's case label or file name."""

import pytest
from django.urls import reverse

from audit.models import Case, Manifest
from audit.review import cases
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs

pytestmark = pytest.mark.django_db


def completed(tmp_path, make, **fields) -> Manifest:
    with open(make(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, submitted_by="t", **fields).job_id)
    return Manifest.objects.order_by("-sequence").first()


def exported(admin_client, changelist: str, action: str, selected) -> str:
    response = admin_client.post(
        reverse(f"admin:audit_{changelist}_changelist"), {"action": action, "_selected_action": selected}
    )
    assert response.status_code == 200
    b"".join(response.streaming_content)
    return response["Content-Disposition"]


def test_a_bundles_package_is_named_after_its_case_label_made_safe(admin_client, tmp_path):
    manifest = completed(tmp_path, pdfs.mixed, filename="scan.pdf", case_label='Claim 1042 / "Ünïcode"')
    disposition = exported(admin_client, "manifest", "export_evidence_action", [manifest.pk])
    assert f'filename="pagetrail-evidence-claim-1042-unicode-{manifest.sequence:06d}-{manifest.sequence:06d}.zip"' in (
        disposition
    )


def test_without_a_case_label_the_file_name_names_it(admin_client, tmp_path):
    manifest = completed(tmp_path, pdfs.mixed, filename="../Policy 7.pdf")
    disposition = exported(admin_client, "manifest", "export_evidence_with_assets_action", [manifest.pk])
    name = f"pagetrail-evidence-policy-7-{manifest.sequence:06d}-{manifest.sequence:06d}-with-assets.zip"
    assert f'filename="{name}"' in disposition


def test_a_package_of_several_bundles_keeps_its_sequence_name(admin_client, tmp_path):
    first = completed(tmp_path, pdfs.mixed, filename="a.pdf")
    second = completed(tmp_path, pdfs.jpeg_rgb, filename="b.pdf")
    disposition = exported(admin_client, "manifest", "export_evidence_action", [first.pk, second.pk])
    assert first.sequence < second.sequence
    assert f'filename="pagetrail-evidence-{first.sequence:06d}-{second.sequence:06d}.zip"' in disposition


def test_a_case_package_is_named_after_the_case(admin_client, tmp_path):
    cases.split(completed(tmp_path, pdfs.mixed, filename="a.pdf"), [("claim A", 1, 2)], "rita")
    disposition = exported(admin_client, "case", "export_case_evidence_action", [Case.objects.get().pk])
    assert 'filename="pagetrail-evidence-claim-a-' in disposition
