from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents")

    def ready(self) -> None:
        # Registered with Celery at start-up: services enqueue these tasks by name.
        from agents import tasks  # noqa: F401
