"""Names, not hashes: what a person reads names the file (its upload name, case, page), and the stored name made of
hashes stays one hover away."""

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from audit.models import Asset, Finding
from audit.verification.verify import verify_all
from extraction.intake.rounds import InputGone, request_reextraction
from extraction.models import Bundle
from tests.conftest import approved_policy, complete, read_stored, write_stored
from tests.extraction.test_admin import distinct_pdf

pytestmark = pytest.mark.django_db


@pytest.fixture
def claim(tmp_path):
    return complete(distinct_pdf(tmp_path, 1), filename="scan-0007.pdf", case_label="claim-1042")


def first_asset(manifest) -> Asset:
    return manifest.assets.order_by("page", "index_on_page").first()


def visible_text(html: str) -> str:
    """What a reader sees: the page without its tags (and so without titles and other attributes)."""
    return re.sub(r"<[^>]*>", " ", html)


def test_an_asset_is_named_by_its_file_page_and_place(claim):
    asset = first_asset(claim)
    assert str(asset) == "scan-0007.pdf, page 1 (index 0)"


def test_a_manifest_is_named_by_its_file(claim):
    assert str(claim) == f"manifest {claim.sequence} of scan-0007.pdf"


def test_a_bundle_without_a_name_is_named_by_its_hash_rather_than_by_nothing(tmp_path):
    manifest = complete(distinct_pdf(tmp_path, 2), filename="")
    assert manifest.job.bundle.file_name == f"unnamed bundle {manifest.correlation_id[:12]}"


def flip_one_byte(asset: Asset) -> None:
    flipped = bytearray(read_stored("outputs", asset.name))
    flipped[len(flipped) // 2] ^= 1
    write_stored("outputs", asset.name, bytes(flipped))


def test_a_finding_names_the_file_it_is_about(claim):
    asset = first_asset(claim)
    flip_one_byte(asset)
    verify_all()
    assert str(Finding.objects.get()) == "Hash Mismatch: scan-0007.pdf, page 1 (index 0)"


def test_the_findings_list_names_the_file_and_keeps_its_stored_name_on_hover(admin_client, claim):
    asset = first_asset(claim)
    flip_one_byte(asset)
    verify_all()
    page = admin_client.get(reverse("admin:audit_finding_changelist")).content.decode()
    results = page.split('id="result_list"')[1].split("</table>")[0]
    assert "scan-0007.pdf, page 1 (index 0)" in visible_text(results)
    assert asset.name not in visible_text(results) and asset.name.rsplit("/", 1)[-1] not in visible_text(results)
    assert f'title="{asset.name}"' in results  # one hover away (the finding's page shows it to copy)


def test_the_asset_list_names_images_by_file_and_page(admin_client, claim):
    asset = first_asset(claim)
    page = admin_client.get(reverse("admin:audit_asset_changelist")).content.decode()
    results = page.split('id="result_list"')[1].split("</table>")[0]
    assert "scan-0007.pdf, page 1 (index 0)" in visible_text(results)
    assert f"manifest {claim.sequence} of scan-0007.pdf" in visible_text(results)
    assert asset.name not in visible_text(results) and f'title="{asset.name}"' in results


def test_the_review_pages_thumbnails_are_named_by_file_and_page(client, admin_user, claim):
    client.force_login(admin_user)
    page = client.get(reverse("review-manifest", args=[claim.pk])).content.decode()
    alts = re.findall(r'<img[^>]*\balt="([^"]*)"', page)
    assert "scan-0007.pdf, page 1, image 1" in alts
    assert not [alt for alt in alts if claim.correlation_id[:12] in alt]


def due_for_deletion(manifest) -> None:
    """A window of 0 days for an input uploaded yesterday (the database's clock may count whole seconds only)."""
    Bundle.objects.filter(pk=manifest.job.bundle_id).update(created_at=timezone.now() - timedelta(days=1))
    approved_policy("claims", is_default=True, input_days=0, output_days=None, manifest_days=None)


def test_a_dry_run_of_retention_says_would_delete_and_names_bundles_first(claim, capsys):
    due_for_deletion(claim)
    call_command("apply_retention", "--dry-run")
    lines = capsys.readouterr().out.splitlines()
    expected = f"would delete: input of scan-0007.pdf (case claim-1042; bundle {claim.correlation_id[:16]}"
    assert [line for line in lines if line.startswith(expected)] and not any(
        line.startswith("deleted") for line in lines
    )


def test_a_run_of_retention_says_deleted_with_the_names(claim, capsys):
    due_for_deletion(claim)
    call_command("apply_retention")
    assert "deleted: input of scan-0007.pdf (case claim-1042; bundle " in capsys.readouterr().out


def test_the_verification_command_names_the_file_before_its_stored_name(claim, capsys):
    asset = first_asset(claim)
    flip_one_byte(asset)
    with pytest.raises(CommandError):
        call_command("verify_manifests")
    said = f"hash_mismatch: scan-0007.pdf, page 1 (index 0) (stored as {asset.name}): "
    assert said in capsys.readouterr().out


def test_a_refused_re_extraction_names_the_bundle_whose_input_is_gone(claim):
    bundle = claim.job.bundle
    bundle.mark_input_deleted()
    with pytest.raises(InputGone) as refused:
        request_reextraction(bundle)
    assert str(refused.value).startswith(f"The input of scan-0007.pdf (bundle {claim.correlation_id[:16]}) was deleted")


def test_a_manifests_page_names_its_assets_in_the_same_queries_however_many_it_has(admin_client, claim, tmp_path):
    from tests import pdfs
    from tests.extraction.test_admin import queries_for

    mixed = complete(pdfs.mixed(tmp_path), filename="mixed.pdf")
    pages = [reverse("admin:audit_manifest_change", args=[m.pk]) for m in (claim, mixed)]
    admin_client.get(pages[0])  # the first render of a session does work of its own
    assert mixed.assets.count() > claim.assets.count()
    assert queries_for(admin_client, pages[1]) == queries_for(admin_client, pages[0])
