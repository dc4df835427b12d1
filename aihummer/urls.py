from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from aihummer.api import MeApi, healthz
from aihummer.sso.views import OidcCallbackView, OidcLoginView, OidcLogoutView

v1_patterns = [
    path("me/", MeApi.as_view(), name="me"),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("v1/", include((v1_patterns, "v1"))),
    # Always routed, answering 404 until OIDC is configured: the views read the
    # settings at each request. Named as mozilla-django-oidc expects.
    path("oidc/authenticate/", OidcLoginView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", OidcCallbackView.as_view(), name="oidc_authentication_callback"),
    path("oidc/logout/", OidcLogoutView.as_view(), name="oidc_logout"),
]
