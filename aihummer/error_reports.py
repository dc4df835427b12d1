"""Error pages and error mails that never show a secret, not even in development."""

from django.http import HttpRequest
from django.views.debug import SafeExceptionReporterFilter


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django hides `sensitive_variables` / `sensitive_post_parameters` only when DEBUG is
    off; a credential typed into a form must stay hidden on the debug page too."""

    def is_active(self, request: HttpRequest | None) -> bool:
        return True
