"""The admin site: open to every workspace member, not only `is_staff` users."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import RelatedFieldListFilter, RelatedOnlyFieldListFilter, helpers
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.admin.utils import get_fields_from_path, unquote
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import models, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.admin import SimpleHistoryAdmin

from aihummer.actors import Actor, Verb, may_use_admin
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.ids import canonical_id
from aihummer.models import Workspace


class MemberAuthenticationForm(AdminAuthenticationForm):
    def confirm_login_allowed(self, user: object) -> None:
        from aihummer.services import invitation_pending_for

        if not may_use_admin(user) and not invitation_pending_for(user):
            raise ValidationError(
                gettext("This account belongs to no workspace. Ask a workspace admin to add you."),
                code="no_workspace",
            )


class AiHummerAdminSite(admin.AdminSite):
    site_header = "AiHummer"
    site_title = "AiHummer"
    index_title = _("Control plane")
    site_url = None  # no public site: "View site" would lead back here
    login_form = MemberAuthenticationForm

    def has_permission(self, request: HttpRequest) -> bool:
        if not request.user.is_authenticated:
            return False
        return self.actor(request).may_use_admin

    def actor(self, request: HttpRequest) -> Actor:
        return Actor.for_request(request)

    def login(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        """The login page offers "Log in with SSO" when OIDC is configured, and the
        password form unless local accounts are turned off (AIHUMMER_LOCAL_LOGIN)."""
        if request.method == "POST" and not settings.AIHUMMER_LOCAL_LOGIN:
            messages.error(request, gettext("Local accounts are turned off; log in with SSO."))
            return HttpResponseRedirect(request.get_full_path())
        context = {"sso_enabled": settings.OIDC_ENABLED, "local_login": settings.AIHUMMER_LOCAL_LOGIN}
        return super().login(request, {**context, **(extra_context or {})})

    def logout(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        """A person who came through the identity provider leaves it too (RP-initiated
        logout), when it offers an end-session endpoint."""
        # Here, not at the top: the OIDC views bring requests, PyJWT and the OIDC
        # library, which a process that never logs anyone out need not load.
        from aihummer.sso.views import OidcLogoutView, is_sso_session

        if request.method == "POST" and settings.OIDC_ENABLED and is_sso_session(request):
            return OidcLogoutView.as_view()(request)
        return super().logout(request, extra_context)


class WorkspaceScopedAdmin(SimpleHistoryAdmin):
    """A ModelAdmin whose rows and rights follow the actor's workspaces.

    `workspace_path` is the lookup from the model to its Workspace (`""` for the
    Workspace itself); the `*_verb` attributes map admin permissions onto the matrix.
    """

    workspace_path = "workspace"
    view_verb = Verb.READ
    add_verb = Verb.MANAGE
    change_verb = Verb.MANAGE
    delete_verb = Verb.MANAGE

    def actor(self, request: HttpRequest) -> Actor:
        return Actor.for_request(request)

    def found_or_404(self, request: HttpRequest, object_id: str, selector: Callable[..., models.Model]) -> models.Model:
        """The row `selector(actor=, pk=)` finds for the URL's `object_id` as this request's
        actor; a 404 when it finds none or the id is malformed (the same answer both ways)."""
        try:
            return selector(actor=self.actor(request), pk=unquote(object_id))
        except (NotFound, ValueError, ValidationError):
            raise Http404 from None

    def workspace_of(self, obj: models.Model) -> Workspace:
        for attribute in filter(None, self.workspace_path.split("__")):
            obj = getattr(obj, attribute)
        return obj

    def scope(self, request: HttpRequest, queryset: models.QuerySet, verb: Verb = Verb.READ) -> models.QuerySet:
        workspace_ids = self.actor(request).workspace_ids(verb)
        if workspace_ids is None:
            return queryset
        lookup = f"{self.workspace_path}__in" if self.workspace_path else "pk__in"
        return queryset.filter(**{lookup: workspace_ids})

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return self.scope(request, super().get_queryset(request))

    def get_list_filter(self, request: HttpRequest) -> list:
        # Django's filter on a relation lists every row of the related table: other
        # tenants' workspaces, agents and keys by name. Offer only the values found
        # among the rows this request may see.
        return [self._scoped_filter(entry) for entry in super().get_list_filter(request)]

    def _scoped_filter(self, entry: object) -> object:
        if isinstance(entry, str) and get_fields_from_path(self.model, entry)[-1].is_relation:
            return (entry, RelatedOnlyFieldListFilter)
        if isinstance(entry, tuple) and entry[1] is RelatedFieldListFilter:
            return (entry[0], RelatedOnlyFieldListFilter)
        return entry

    def allowed(self, request: HttpRequest, verb: Verb, obj: models.Model | None = None) -> bool:
        actor = self.actor(request)
        if obj is None:
            workspace_ids = actor.workspace_ids(verb)
            return workspace_ids is None or bool(workspace_ids)
        return actor.can(verb, self.workspace_of(obj))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.allowed(request, self.view_verb)

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.allowed(request, self.view_verb, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.allowed(request, self.add_verb)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.allowed(request, self.change_verb, obj)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.allowed(request, self.delete_verb, obj)

    def get_form(self, request: HttpRequest, obj: models.Model | None = None, **kwargs: object) -> type:
        form = super().get_form(request, obj, **kwargs)
        if issubclass(form, ServiceModelForm):
            form = type(form.__name__, (form,), service_form_attrs(request))
        return form

    def get_search_results(
        self, request: HttpRequest, queryset: models.QuerySet, search_term: str
    ) -> tuple[models.QuerySet, bool]:
        # PostgreSQL refuses NUL in a text parameter: a search (or an autocomplete) for
        # '%00' would be a 500. Nobody means a NUL, so it is dropped.
        return super().get_search_results(request, queryset, search_term.replace("\x00", ""))

    def response_action(self, request: HttpRequest, queryset: models.QuerySet) -> HttpResponse | None:
        # Django filters `pk__in` on whatever was posted; 'abc' there is a 500 when the
        # action runs. A forged selection is refused before any action sees it.
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        if not all(canonical_id(value) for value in selected):
            self.message_user(request, gettext("The selection holds an invalid id; nothing was done."), messages.ERROR)
            return None
        return super().response_action(request, queryset)

    def get_actions(self, request: HttpRequest) -> dict:
        # Bulk delete goes straight to the queryset, past the services' rules and
        # history stamps: deletes happen one row at a time, through the service.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def save_model(self, request: HttpRequest, obj: models.Model, form: forms.ModelForm, change: bool) -> None:
        if isinstance(form, ServiceModelForm):
            obj.__dict__.update(form.save_through_service().__dict__)
        else:
            super().save_model(request, obj, form, change)

    def _changeform_view(
        self, request: HttpRequest, object_id: str | None, form_url: str, extra_context: dict | None
    ) -> HttpResponse:
        # Django writes only when the form and every inline are valid; a service may
        # still refuse in save_model/save_related. Then everything the save wrote is
        # rolled back and the page is validated again with the refusal on its form:
        # a page that shows an error has saved nothing.
        if request.method != "POST":
            return super()._changeform_view(request, object_id, form_url, extra_context)
        try:
            with transaction.atomic():
                return super()._changeform_view(request, object_id, form_url, extra_context)
        except ServiceRefused as refused:
            request.service_refusals = {refused.prefix: refused.error}
            return super()._changeform_view(request, object_id, form_url, extra_context)

    def deletion_refusal(self, request: HttpRequest, obj: models.Model) -> str | None:
        """Why `obj` may not be deleted now (shown instead of deleting), or None."""
        return None

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict | None = None) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_delete_permission(request, obj):
            return super().delete_view(request, object_id, extra_context)
        refusal = self.deletion_refusal(request, obj)
        if not refusal:
            try:
                return super().delete_view(request, object_id, extra_context)
            except (ApplicationError, ValidationError) as exc:  # delete_model's service refused: rolled back
                refusal = service_error_message(exc)
        messages.error(request, refusal)
        change = f"{self.admin_site.name}:{obj._meta.app_label}_{obj._meta.model_name}_change"
        return HttpResponseRedirect(reverse(change, args=[obj.pk]))

    def formfield_for_foreignkey(self, db_field: models.Field, request: HttpRequest, **kwargs: object) -> object:
        # Pickers offer only what the actor's workspaces hold: another workspace's row
        # must answer "Select a valid choice" exactly like a missing one.
        related = db_field.related_model
        workspace_ids = self.actor(request).workspace_ids(self.add_verb)
        if related is Workspace:
            queryset = Workspace.objects.all()
            kwargs["queryset"] = queryset if workspace_ids is None else queryset.filter(pk__in=workspace_ids)
        elif any(field.name == "workspace" for field in related._meta.get_fields()) and "queryset" not in kwargs:
            queryset = related._default_manager.all()
            kwargs["queryset"] = queryset if workspace_ids is None else queryset.filter(workspace_id__in=workspace_ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    # --- history views: hidden rows answer as missing ones ------------------------------
    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict | None = None) -> HttpResponse:
        self.require_visible_history(request, object_id)
        return super().history_view(request, object_id, extra_context)

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: dict | None = None
    ) -> HttpResponse:
        self.require_visible_history(request, object_id)
        # simple-history would int() whatever the URL holds ('abc', '%00', '¹'): a 500.
        if not canonical_id(unquote(version_id)):
            raise Http404
        if request.method == "POST":
            # History is read, never replayed: reverting would skip the services.
            raise PermissionDenied(
                gettext("Reverting from history is disabled; make the change through the usual form.")
            )
        return super().history_form_view(request, object_id, version_id, extra_context)

    def require_visible_history(self, request: HttpRequest, object_id: str) -> None:
        """Raise Http404 unless the row, or its last historical record, is one this
        request could see in the changelist. simple-history itself would answer 403,
        which tells a stranger that the row exists."""
        object_id = unquote(object_id)
        if not hasattr(self.model, "history"):
            raise Http404  # an execution record (a turn, a run) keeps no history
        try:
            if self.get_queryset(request).filter(pk=object_id).exists():
                return
        except (ValueError, ValidationError):
            raise Http404 from None
        # Filter on the row's own id field: a historical model's pk is history_id.
        pk_name = self.model._meta.pk.attname
        latest = self.model.history.filter(**{pk_name: object_id}).order_by("-history_date").first()
        if latest is None or not self.historical_record_visible(request, latest):
            raise Http404

    def historical_record_visible(self, request: HttpRequest, record: models.Model) -> bool:
        if getattr(record, "is_sandbox", False):
            return False
        return self.actor(request).can(self.view_verb, self.workspace_of(record.instance))


def service_form_attrs(request: HttpRequest) -> dict:
    """What a ServiceModelForm of this request needs: who acts, and what a first pass's
    service refused (see `WorkspaceScopedAdmin._changeform_view`)."""
    return {"actor": Actor.for_request(request), "refusals": getattr(request, "service_refusals", {})}


# What a service raises when it refuses: bad input, a state that forbids it, a right.
SERVICE_ERRORS = (ValidationError, ApplicationError, PermissionDenied)


def service_error_message(exc: Exception) -> str:
    """A service's refusal as the sentence a person reads in a message (where there is
    no form to put it on): a ValidationError's messages, naming their field, or the
    refusal's own message."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    return " ".join(
        m if field == NON_FIELD_ERRORS else f"{field}: {m}" for field, ms in exc.message_dict.items() for m in ms
    )


def add_service_errors(form: forms.BaseForm, exc: Exception) -> None:
    """The one mapping of a service's refusal onto an admin form: errors of fields the
    form shows land on them; the others (a snapshot key, a field the form does not
    have) become form errors that name their field, never the ValueError Django raises
    for them; an ApplicationError or PermissionDenied is a form error."""
    if not isinstance(exc, ValidationError):
        form.add_error(None, str(exc))
    elif not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
    else:
        for field, field_messages in exc.message_dict.items():
            if field in form.fields:
                form.add_error(field, field_messages)
            else:
                form.add_error(None, [m if field == NON_FIELD_ERRORS else f"{field}: {m}" for m in field_messages])


class ServiceRefused(Exception):
    """A service refused the write of the form with `prefix` during save_model or
    save_related: the change view rolls back all the save wrote and shows the page
    again with the refusal on that form."""

    def __init__(self, prefix: str | None, error: Exception) -> None:
        super().__init__(str(error))
        self.prefix, self.error = prefix, error


class ServiceModelForm(forms.ModelForm):
    """A ModelForm whose write is a service call, made by the admin's save_model (the
    main form) or its formset's save (an inline row): never while the form validates,
    so a page that shows an error has written nothing.

    A refusal raises `ServiceRefused`; `WorkspaceScopedAdmin` rolls the whole save back
    and validates the page again with the refusal in `refusals` (form prefix → error),
    where it lands on this form's fields. Subclasses define `call_service()`; `actor`
    and `refusals` are set by `WorkspaceScopedAdmin.get_form` (and an inline's formset).
    """

    actor: Actor | None = None
    refusals: dict = {}  # set per request on a subclass, never mutated
    result: models.Model | None = None

    def call_service(self) -> models.Model:
        raise NotImplementedError

    def _post_clean(self) -> None:
        super()._post_clean()
        refusal = self.refusals.get(self.prefix)
        if refusal is not None:
            add_service_errors(self, refusal)

    def save_through_service(self) -> models.Model:
        """Write through the service (in a savepoint); a refusal is `ServiceRefused`."""
        try:
            with transaction.atomic():
                self.result = self.call_service()
        except SERVICE_ERRORS as exc:
            raise ServiceRefused(self.prefix, exc) from exc
        return self.result

    def changed_values(self, fields: tuple[str, ...]) -> dict:
        """The submitted values that differ from the row as stored now."""
        stored = type(self.instance)._base_manager.get(pk=self.instance.pk)
        return {
            field: self.cleaned_data[field]
            for field in fields
            if field in self.cleaned_data and self.cleaned_data[field] != getattr(stored, field)
        }


class AgeFilter(admin.SimpleListFilter):
    """By `created_at`: the last hour, day or week, or older (the review queue and the
    runs list)."""

    title = _("age")
    parameter_name = "age"
    AGES = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [
            ("1h", _("Last hour")),
            ("1d", _("Last day")),
            ("7d", _("Last week")),
            ("old", _("Older than a week")),
        ]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        now = timezone.now()
        if self.value() in self.AGES:
            return queryset.filter(created_at__gte=now - self.AGES[self.value()])
        if self.value() == "old":
            return queryset.filter(created_at__lt=now - self.AGES["7d"])
        return queryset


class ListedFilter(admin.SimpleListFilter):
    """The default list (the queryset's `listed()`: what the runtime policy has not
    archived) or every row. Archived rows are kept, only not listed by default."""

    title = _("listed")
    parameter_name = "listed"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("all", _("All, archived included"))]

    def queryset(self, request: HttpRequest, queryset: models.QuerySet) -> models.QuerySet:
        return queryset if self.value() == "all" else queryset.listed()

    def choices(self, changelist: object) -> object:
        yield {
            "selected": self.value() != "all",
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": _("Listed"),
        }
        yield {
            "selected": self.value() == "all",
            "query_string": changelist.get_query_string({self.parameter_name: "all"}),
            "display": _("All, archived included"),
        }
