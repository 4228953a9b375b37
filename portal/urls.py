from django.contrib import admin
from django.templatetags.static import static
from django.urls import path, re_path
from django.views.generic import RedirectView

from audit import views as audit_views
from audit.operations import dashboard
from extraction import views as extraction_views
from portal import mfa, time_zones
from portal.api import api, unknown_route

admin.site.site_header = "Pagetrail"
admin.site.site_title = "Pagetrail"
admin.site.index_title = "Extraction jobs and their evidence"
admin.site.site_url = None  # the portal is the admin: a "View site" link led back to it
# The lists need the width (file name, case label, state, pages, assets, flags at 1280 px); the home page
# and the breadcrumbs lead everywhere the sidebar did.
admin.site.enable_nav_sidebar = False
admin.site.login_form = mfa.SecondFactorLoginForm
admin.site.login_template = "portal/login.html"
handler400 = "portal.errors.bad_request"
handler403 = "portal.errors.forbidden"
handler404 = "portal.errors.not_found"
handler500 = "portal.errors.server_error"

urlpatterns = [
    path("files/inputs/<int:bundle_id>/", extraction_views.download_input, name="download-input"),
    path("files/assets/<int:asset_id>/", audit_views.download_asset, name="download-asset"),
    path("files/manifests/<int:manifest_id>/", audit_views.download_manifest, name="download-manifest"),
    path("files/assets/<int:asset_id>/thumbnail/", audit_views.asset_thumbnail, name="asset-thumbnail"),
    path("files/previews/<int:preview_id>/", audit_views.page_preview, name="page-preview"),
    path("review/<int:manifest_id>/", audit_views.review_page, name="review-manifest"),
    path("review/<int:manifest_id>/previews/", audit_views.review_previews, name="review-previews"),
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", unknown_route),
    path("account/two-factor/", mfa.two_factor, name="two-factor"),
    path("account/time-zone/", time_zones.time_zone, name="time-zone"),
    path("admin/dashboard/", dashboard.dashboard, name="dashboard"),
    path("metrics", dashboard.prometheus, name="metrics"),
    path("signing-keys.json", audit_views.signing_keys, name="signing-keys"),
    path("admin/", admin.site.urls),
    path("favicon.ico", RedirectView.as_view(url=static("portal/favicon.svg"), permanent=True)),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
