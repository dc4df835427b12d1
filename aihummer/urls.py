from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from aihummer.api import MeApi, healthz

v1_patterns = [
    path("me/", MeApi.as_view(), name="me"),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("v1/", include((v1_patterns, "v1"))),
]

if settings.OIDC_ENABLED:
    urlpatterns.append(path("oidc/", include("mozilla_django_oidc.urls")))
