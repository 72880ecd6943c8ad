from django.urls import path

from pipeline import api

urlpatterns = [
    path("query", api.QueryApi.as_view(), name="query"),
    path("answers/<uuid:response_id>", api.AnswerDetailApi.as_view(), name="answer-detail"),
    path("answers/<uuid:response_id>/mark", api.AnswerMarkApi.as_view(), name="answer-mark"),
    path("conversations", api.ConversationListApi.as_view(), name="conversations"),
    path("conversations/<uuid:conversation_id>", api.ConversationDetailApi.as_view(), name="conversation-detail"),
    path("health", api.HealthApi.as_view(), name="health"),
    path("ready", api.ReadyApi.as_view(), name="ready"),
]
