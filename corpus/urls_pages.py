from django.urls import path

from corpus import views

urlpatterns = [
    path("documents/<int:document_id>", views.document_page, name="document-page"),
]
