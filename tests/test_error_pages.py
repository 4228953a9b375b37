"""A page that is not there, in the portal's style: with the header and a way home, never Django's bare page."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("address", ["/review/999999/", "/review/not-a-page/", "/no-such-page"])
def test_an_unknown_address_is_a_404_in_the_portals_style(admin_client, address):
    response = admin_client.get(address)
    page = response.content.decode()
    assert response.status_code == 404
    assert "There is no page at this address" in page
    assert 'id="site-name"' in page and "Pagetrail" in page


def test_an_unknown_portal_page_is_not_djangos_bare_not_found(admin_client):
    page = admin_client.get("/review/not-a-page/").content.decode()
    assert "There is no page at this address" in page and "<h1>Not Found</h1>" not in page


def test_the_admin_has_no_view_site_link_back_to_itself(admin_client):
    assert "View site" not in admin_client.get("/admin/").content.decode()


def test_an_unknown_api_address_is_json(client):
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404 and response.json()["error"]["code"]
