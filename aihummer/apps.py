from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig
from django.utils.translation import gettext_lazy as _


class AiHummerConfig(AppConfig):
    name = "aihummer"
    verbose_name = _("Workspaces and access")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        user_logged_in.connect(_accept_invitations, dispatch_uid="aihummer_accept_invitations")
        from django.conf import settings

        from aihummer import telemetry

        telemetry.configure(service_name=settings.OTEL_SERVICE_NAME)
        # The models and the admin are loaded (the admin's app is first in INSTALLED_APPS).
        import aihummer

        aihummer.loaded()


def _accept_invitations(sender: object, request: object, user: object, **kwargs: object) -> None:
    # Signing in (password or OIDC) is how an invited person says yes.
    from aihummer.services import invitations_accept

    invitations_accept(user=user)


class AiHummerAdminConfig(AdminConfig):
    default_site = "aihummer.admin_site.AiHummerAdminSite"
