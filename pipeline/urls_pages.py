from django.urls import path

from pipeline import views

urlpatterns = [
    path("", views.ask_page, name="ask"),
    path("history", views.history_page, name="history"),
]
