from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

admin.site.site_header = "Pagetrail"
admin.site.site_title = "Pagetrail"
admin.site.index_title = "Extraction jobs and their evidence"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
