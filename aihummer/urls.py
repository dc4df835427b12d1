from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from agents.api.agents import AgentViewSet
from agents.api.approval_policy import ApprovalPolicyApi, ApprovalPolicyHistoryApi
from agents.api.approvals import ApprovalRequestViewSet
from agents.api.conversations import AgentConversationViewSet, ConversationViewSet
from agents.api.credentials import CredentialViewSet
from agents.api.presets import ModelCatalogViewSet, PresetViewSet
from agents.api.profile import AgentSectionViewSet, AgentSkillViewSet
from agents.api.skills import SkillViewSet
from agents.api.tool_settings import AgentToolSettingsApi, ToolPolicyApi
from agents.api.turns import AgentTurnViewSet, DebugLogViewSet
from agents.api.versions import AgentVersionViewSet, PromptVersionViewSet
from aihummer.api import MeApi, not_found
from aihummer.health import healthz, readyz
from aihummer.metrics import metrics_view
from aihummer.sso.views import OidcCallbackView, OidcLoginView, OidcLogoutView, protected_resource_metadata
from workflows import api as workflows_api

KEY = "(?P<agent_key>[a-z0-9_-]{1,50})"

router = SimpleRouter(trailing_slash=False)
router.register("admin/agents", AgentViewSet, basename="agent")
router.register(f"admin/agents/{KEY}/sections", AgentSectionViewSet, basename="agent-section")
router.register(f"admin/agents/{KEY}/skills", AgentSkillViewSet, basename="agent-skill")
router.register(f"admin/agents/{KEY}/versions", AgentVersionViewSet, basename="agent-version")
router.register(f"admin/agents/{KEY}/conversations", AgentConversationViewSet, basename="agent-conversation")
router.register("admin/prompt-versions", PromptVersionViewSet, basename="prompt-version")
router.register("admin/approvals", ApprovalRequestViewSet, basename="approval")
router.register("admin/presets", PresetViewSet, basename="preset")
router.register("admin/models", ModelCatalogViewSet, basename="model")
router.register("admin/skills", SkillViewSet, basename="skill")
router.register("admin/credentials", CredentialViewSet, basename="credential")
router.register("admin/turns", AgentTurnViewSet, basename="turn")
router.register("admin/conversations", ConversationViewSet, basename="conversation")
router.register("admin/debug-logs", DebugLogViewSet, basename="debug-log")
router.register("admin/workflows", workflows_api.WorkflowViewSet, basename="workflow")
router.register("admin/runs", workflows_api.RunViewSet, basename="run")

v1_patterns = [
    path("me", MeApi.as_view(), name="me"),
    # The one route that had a trailing slash, kept for the clients written against it.
    path("me/", RedirectView.as_view(pattern_name="v1:me", permanent=True, query_string=True)),
    path("admin/approval-policy", ApprovalPolicyApi.as_view(), name="approval-policy"),
    path("admin/tool-policy", ToolPolicyApi.as_view(), name="tool-policy"),
    re_path(rf"^admin/agents/{KEY}/tool-settings$", AgentToolSettingsApi.as_view(), name="agent-tool-settings"),
    path("admin/approval-policy/history", ApprovalPolicyHistoryApi.as_view(), name="approval-policy-history"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="v1:schema"), name="docs"),
    *router.urls,
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("v1/", include((v1_patterns, "v1"))),
    # Always routed, answering 404 until OIDC is configured: the views read the
    # settings at each request. Named as mozilla-django-oidc expects.
    path("oidc/authenticate/", OidcLoginView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", OidcCallbackView.as_view(), name="oidc_authentication_callback"),
    path("oidc/logout/", OidcLogoutView.as_view(), name="oidc_logout"),
    # The MCP server's OAuth protected-resource metadata (RFC 9728), 404 until
    # OIDC_MCP_AUDIENCE is set: the bare form and the form suffixed with /mcp.
    path(".well-known/oauth-protected-resource", protected_resource_metadata, name="oauth_protected_resource"),
    path(".well-known/oauth-protected-resource/mcp", protected_resource_metadata, name="oauth_protected_resource_mcp"),
]

handler404 = not_found
