from django.urls import path

from reputation import api

urlpatterns = [path("feedback", api.FeedbackApi.as_view(), name="feedback")]
