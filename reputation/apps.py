from django.apps import AppConfig


class ReputationConfig(AppConfig):
    name = "reputation"
    verbose_name = "Reputation"
