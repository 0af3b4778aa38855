from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from loopx_site.core.api import schema  # noqa: F401 - registers the host token scheme

admin.autodiscover()  # idempotent; CLI processes that never load the URLconf skip it

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/v1/", include("loopx_site.core.api.urls")),
    path("api/v1/", include("preferences.api.urls")),
    path("api/v1/", include("reward_memory.api.urls")),
    path("api/v1/", include("hooks.api.urls")),
    path("api/v1/", include("turn_recall.api.urls")),
]

admin.site.site_header = "LoopX Memory"
admin.site.site_title = "LoopX Memory operators"
admin.site.index_title = "Memory and capability-hook control plane"
