from django.urls import path

from corpus import api

urlpatterns = [
    path("documents", api.DocumentListApi.as_view(), name="documents"),
    path("documents/<int:document_id>", api.DocumentDetailApi.as_view(), name="document-detail"),
    path("documents/<int:document_id>/original", api.DocumentOriginalApi.as_view(), name="document-original-api"),
    path("documents/<int:document_id>/retract", api.DocumentRetractApi.as_view(), name="document-retract"),
    path("documents/<int:document_id>/restore", api.DocumentRestoreApi.as_view(), name="document-restore"),
    path("documents/<int:document_id>/move", api.DocumentMoveApi.as_view(), name="document-move"),
    path("chunks/<int:chunk_id>", api.ChunkDetailApi.as_view(), name="chunk-detail"),
    path("uploads/<int:upload_id>", api.UploadDetailApi.as_view(), name="upload-detail"),
]
