from django.urls import path

from corpus import views

urlpatterns = [
    path("documents/<int:document_id>", views.document_page, name="document-page"),
    path("documents/<int:document_id>/original", views.document_original, name="document-original"),
    path("documents/<int:document_id>/original/view", views.document_original_view, name="document-original-view"),
]
