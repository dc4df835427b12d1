"""The v1 REST API root: who am I, and a health check."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError, validation_error_detail


class MeApi(APIView):
    """Who is calling: an API key (its workspace, name and scopes) or a person
    signed in through the identity provider (their workspaces and roles)."""

    class KeyOutputSerializer(serializers.Serializer):
        source = serializers.CharField()
        workspace = serializers.CharField()
        key = serializers.CharField()
        scopes = serializers.ListField(child=serializers.CharField())
        owner = serializers.CharField(allow_null=True)

    class PersonOutputSerializer(serializers.Serializer):
        class MembershipSerializer(serializers.Serializer):
            workspace = serializers.CharField(source="workspace.slug")
            role = serializers.CharField()

        source = serializers.CharField()
        username = serializers.CharField()
        email = serializers.CharField()
        memberships = MembershipSerializer(many=True)

    def get(self, request: Request) -> Response:
        actor = request.auth
        if actor.kind == Actor.USER:
            user = actor.user
            data = {
                "source": actor.source,
                "username": user.get_username(),
                "email": user.email,
                "memberships": user.memberships.select_related("workspace").order_by("workspace__slug"),
            }
            return Response(self.PersonOutputSerializer(data).data)
        api_key = actor.api_key
        data = {
            "source": actor.source,
            "workspace": api_key.workspace.slug,
            "key": api_key.name,
            "scopes": sorted(api_key.scope_set),
            "owner": api_key.owner.get_username() if api_key.owner else None,
        }
        return Response(self.KeyOutputSerializer(data).data)


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, taught the service errors above."""
    if isinstance(exc, DjangoValidationError):
        return Response(validation_error_detail(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=exc.status_code)
    if isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    return exception_handler(exc, context)
