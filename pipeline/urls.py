from django.urls import path

from pipeline import api

urlpatterns = [
    path("query", api.QueryApi.as_view(), name="query"),
    path("health", api.HealthApi.as_view(), name="health"),
]
