import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from audit.models import Asset, Manifest
from extraction.models import Bundle
from tests.conftest import read_stored

pytestmark = pytest.mark.django_db


def staff(client, *perms):
    user = User.objects.create_user("staff", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=perms))
    client.force_login(user)
    return client


def urls():
    return [
        reverse("download-asset", args=[Asset.objects.first().pk]),
        reverse("download-manifest", args=[Manifest.objects.get().pk]),
        reverse("download-input", args=[Bundle.objects.get().pk]),
    ]


def test_it_streams_stored_files_as_attachments_that_are_never_sniffed(completed, admin_client):
    asset = Asset.objects.first()
    response = admin_client.get(reverse("download-asset", args=[asset.pk]))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff" and response["Content-Type"] == asset.content_type
    assert b"".join(response.streaming_content) == read_stored("outputs", asset.name)


def test_it_refuses_staff_without_the_view_permission(completed, client):
    staff(client)
    assert [client.get(url).status_code for url in urls()] == [403, 403, 403]


def test_it_sends_anonymous_visitors_to_the_login_page(completed, client):
    assert all(client.get(url).status_code == 302 for url in urls())


def test_it_serves_each_file_to_staff_with_the_matching_permission(completed, client):
    staff(client, "view_asset", "view_manifest", "download_input", "view_all_bundles")  # not a Submitter's own
    assert [client.get(url).status_code for url in urls()] == [200, 200, 200]


def test_seeing_a_bundle_does_not_let_anyone_download_its_input(completed, client):
    staff(client, "view_bundle")
    assert client.get(reverse("download-input", args=[Bundle.objects.get().pk])).status_code == 403


def test_it_refuses_to_serve_an_input_whose_bytes_changed_and_raises_an_alert(completed, admin_client):
    from audit.models import Alert
    from tests.conftest import write_stored

    bundle = Bundle.objects.get()
    changed = bytearray(read_stored("inputs", bundle.input_name))
    changed[100] ^= 0x01
    write_stored("inputs", bundle.input_name, bytes(changed))
    response = admin_client.get(reverse("download-input", args=[bundle.pk]))
    assert response.status_code == 409 and b"no longer matches its correlation id" in response.content
    assert Alert.objects.get(kind="input_changed").link == reverse("admin:extraction_bundle_change", args=[bundle.pk])
