from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class AiHummerConfig(AppConfig):
    name = "aihummer"
    verbose_name = "Workspaces and access"


class AiHummerAdminConfig(AdminConfig):
    default_site = "aihummer.admin_site.AiHummerAdminSite"
