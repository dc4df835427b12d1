from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        # Registered with Celery at start-up: services enqueue these tasks by name.
        from agents import tasks  # noqa: F401
