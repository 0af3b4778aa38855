from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

import loopx_site.celery  # noqa: F401  (the task names the admin's schedule form offers)
from loopx_site.core.admin_dashboard import dashboard_view, front_page, no_favicon
from loopx_site.core.api import schema  # noqa: F401 - registers the host token scheme
from loopx_site.core.metrics import metrics_view

admin.autodiscover()  # idempotent; CLI processes that never load the URLconf skip it

urlpatterns = [
    path("", front_page, name="front-page"),
    path("favicon.ico", no_favicon),
    path("metrics", metrics_view, name="metrics"),
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="loopx-dashboard"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/v1/", include("loopx_site.core.api.urls")),
    path("api/v1/", include("preferences.api.urls")),
    path("api/v1/", include("reward_memory.api.urls")),
    path("api/v1/", include("hooks.api.urls")),
    path("api/v1/", include("turn_recall.api.urls")),
    path("", include("loopx_site.mcp.urls")),  # /mcp/ and its RFC 9728 metadata
]

# Failures outside a view: envelopes under /api/, 413/503 pages elsewhere.
handler400 = "loopx_site.core.middleware.handler400"
handler404 = "loopx_site.core.middleware.handler404"
handler500 = "loopx_site.core.middleware.handler500"

admin.site.site_header = "LoopX Memory"
admin.site.site_title = "LoopX Memory operators"
admin.site.site_url = "/"  # "View site": the front page
admin.site.enable_nav_sidebar = False  # lists get the width; the index and breadcrumbs navigate
admin.site.index_title = "Memory and capability-hook control plane"
admin.site.index_template = "admin/loopx_index.html"  # links the operator dashboard
