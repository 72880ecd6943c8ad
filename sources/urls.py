from django.urls import path

from sources import api

urlpatterns = [
    path("sources", api.SourceListApi.as_view(), name="sources"),
    path("sources/<slug:name>", api.SourceDetailApi.as_view(), name="source-detail"),
    path("sources/<slug:name>/sync", api.SourceSyncApi.as_view(), name="source-sync"),
    path("source-secrets", api.SecretGrantListApi.as_view(), name="source-secrets"),
]
