from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"

    def ready(self) -> None:
        # Registered with Celery at start-up, so a worker knows the step task before
        # its first message (autodiscovery is lazy), and `execution` enqueues it by name.
        from workflows import tasks  # noqa: F401
