from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("", include("pipeline.urls_pages")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("corpus.urls")),
    path("api/v1/", include("pipeline.urls")),
    path("api/v1/", include("reputation.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
]
