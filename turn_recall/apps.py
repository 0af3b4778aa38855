from django.apps import AppConfig


class TurnRecallConfig(AppConfig):
    name = "turn_recall"
    verbose_name = "Agent Turn Recall"
