from django.urls import path

from integrations import openai_compatible

urlpatterns = [
    path("v1/chat/completions", openai_compatible.ChatCompletionsApi.as_view(), name="openai-chat-completions"),
    path("v1/models", openai_compatible.ModelsApi.as_view(), name="openai-models"),
]
