from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("", include("pipeline.urls_pages")),
    path("", include("corpus.urls_pages")),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("corpus.urls")),
    path("api/v1/", include("pipeline.urls")),
    path("api/v1/", include("writeback.urls")),
    path("api/v1/", include("reputation.urls")),
    path("api/v1/", include("sources.urls")),
    path("", include("integrations.urls")),  # /v1/ (OpenAI-compatible) and /mcp
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: the page needs no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
]

# Errors Django answers before (or after) a view: JSON under /api/, pages elsewhere.
handler400 = "common.errors.bad_request"
handler403 = "common.errors.permission_denied"
handler404 = "common.errors.not_found"
handler500 = "common.errors.server_error"
