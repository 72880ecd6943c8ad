from django.urls import path

from integrations.views import McpApi

urlpatterns = [
    path("mcp", McpApi.as_view(), name="mcp"),
]
