from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = _("Workflows")

    def ready(self) -> None:
        # Registered with Celery at start-up, so a worker knows the step task before
        # its first message (autodiscovery is lazy), and `execution` enqueues it by name.
        from workflows import tasks  # noqa: F401
