from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """Cairn inside the tools people already use: an OpenAI-compatible chat endpoint for chat
    front-ends, and a Model Context Protocol server for agents. Both ask through the pipeline as
    /api/v1/query does, with the same access rules and limits."""

    name = "integrations"
    verbose_name = "Integrations"
