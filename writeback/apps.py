from django.apps import AppConfig


class WritebackConfig(AppConfig):
    name = "writeback"
    verbose_name = "Write-back: validation and review of proposed corpus additions"
