from django.urls import path

from integrations import openai_compatible
from integrations.views import McpApi

urlpatterns = [
    path("v1/chat/completions", openai_compatible.ChatCompletionsApi.as_view(), name="openai-chat-completions"),
    path("v1/models", openai_compatible.ModelsApi.as_view(), name="openai-models"),
    path("mcp", McpApi.as_view(), name="mcp"),
]
