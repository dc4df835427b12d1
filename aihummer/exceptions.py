"""The errors services raise, and their one mapping onto HTTP answers.

Services raise Django's `ValidationError` (bad input, 400), an `ApplicationError`
subclass (a legal request the current state refuses, 409; its own `status_code`
otherwise) or `PermissionDenied` (403). `aihummer.api.api_exception_handler` turns
them into the REST API's error envelope; the code is the class name in snake case.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError


class ApplicationError(Exception):
    """An operation the current state forbids; `message` is shown to the caller."""

    status_code = 409

    def __init__(self, message: str, *, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class AlreadyDecided(ApplicationError):
    """A proposal someone else decided first."""


def validation_error_detail(error: DjangoValidationError) -> dict | list:
    if hasattr(error, "error_dict"):
        return {field: [str(m) for m in messages] for field, messages in error.message_dict.items()}
    return {"non_field_errors": list(error.messages)}


class NotFound(ApplicationError):
    """A row the actor cannot see: answered exactly like one that does not exist."""

    status_code = 404


class VersionMismatch(ApplicationError):
    """The caller based a change on a live version that is no longer live (If-Match)."""

    status_code = 412
