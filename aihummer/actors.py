"""Who is acting, and what they may do in a workspace.

Every use case receives one `Actor`. `actor.require(verb, workspace)` is the only place
that decides rights (DESIGN.md, "Actors and permissions"); services and the admin's
`has_*_permission` methods both call it.
"""

from __future__ import annotations

import getpass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from aihummer.models import ApiKey, Membership, User, Workspace

if TYPE_CHECKING:
    from django.http import HttpRequest


class Verb(StrEnum):
    READ = "read"
    PROPOSE = "propose"
    WITHDRAW = "withdraw"
    RUN = "run"
    SANDBOX = "sandbox"
    DECIDE = "decide"
    PUBLISH = "publish"
    MANAGE = "manage"


# Lazy: said in the reader's language (the desk's), English for the API and MCP.
VERB_PHRASES = {
    Verb.READ: _("reading"),
    Verb.PROPOSE: _("proposing changes"),
    Verb.WITHDRAW: _("withdrawing proposals"),
    Verb.RUN: _("running agents and workflows"),
    Verb.SANDBOX: _("using sandboxes"),
    Verb.DECIDE: _("approving or rejecting"),
    Verb.PUBLISH: _("publishing changes directly"),
    Verb.MANAGE: _("managing members, keys and credentials"),
}

ROLE_ORDER = [Membership.Role.VIEWER, Membership.Role.EDITOR, Membership.Role.REVIEWER, Membership.Role.ADMIN]

# The least role that grants each verb.
MINIMUM_ROLE = {
    Verb.READ: Membership.Role.VIEWER,
    Verb.PROPOSE: Membership.Role.EDITOR,
    Verb.WITHDRAW: Membership.Role.EDITOR,
    Verb.RUN: Membership.Role.EDITOR,
    Verb.SANDBOX: Membership.Role.EDITOR,
    Verb.DECIDE: Membership.Role.REVIEWER,
    Verb.PUBLISH: Membership.Role.ADMIN,
    Verb.MANAGE: Membership.Role.ADMIN,
}

# The scope an API key needs for each verb; None: no key may ever do it.
REQUIRED_SCOPE = {
    Verb.READ: ApiKey.Scope.READ,
    Verb.PROPOSE: ApiKey.Scope.WRITE,
    Verb.WITHDRAW: ApiKey.Scope.WRITE,
    Verb.RUN: ApiKey.Scope.WRITE,
    Verb.SANDBOX: ApiKey.Scope.WRITE,
    Verb.DECIDE: None,
    Verb.PUBLISH: ApiKey.Scope.PUBLISH,
    Verb.MANAGE: None,
}

# What an agent may never do, whoever it acts for.
AGENT_FORBIDDEN = {Verb.DECIDE, Verb.PUBLISH, Verb.MANAGE}


def may_use_admin(user: object) -> bool:
    """Every active workspace member may log into the admin (no `is_staff` needed)."""
    return Actor.for_user(user).may_use_admin


def role_grants(role: str, verb: Verb) -> bool:
    return ROLE_ORDER.index(Membership.Role(role)) >= ROLE_ORDER.index(MINIMUM_ROLE[verb])


class Actor:
    """A user, an API key, an agent acting on someone's behalf, or the operator's shell.

    `identity` is what four eyes compares; `source` is the label a proposal records.
    """

    USER, API_KEY, AGENT, OPERATOR, RUN = "user", "api_key", "agent", "operator", "run"

    def __init__(
        self,
        *,
        kind: str,
        surface: str,
        user: User | None = None,
        api_key: ApiKey | None = None,
        agent: Any = None,
        on_behalf_of: Actor | None = None,
        client_name: str = "",
        workspace_id: int | None = None,
        person_id: int | None = None,
    ) -> None:
        self.kind = kind
        self.surface = surface
        self.user = user
        self.api_key = api_key
        self.agent = agent
        self.on_behalf_of = on_behalf_of
        self.client_name = client_name
        self.workspace_id = workspace_id
        self.person_id = person_id
        self._roles: dict[int, str] | None = None
        self._run_identities: tuple[tuple[str, int | str], ...] = ()

    # --- constructors -----------------------------------------------------------------
    @classmethod
    def for_user(cls, user: User, *, surface: str = "admin") -> Actor:
        return cls(kind=cls.USER, surface=surface, user=user)

    @classmethod
    def for_request(cls, request: HttpRequest) -> Actor:
        """The request's user as an actor, built once per request (roles cached)."""
        actor = getattr(request, "_aihummer_actor", None)
        if actor is None or actor.user != request.user:
            actor = cls.for_user(request.user, surface="admin")
            request._aihummer_actor = actor
        return actor

    @classmethod
    def for_api_key(cls, api_key: ApiKey, *, surface: str = "api", client_name: str = "") -> Actor:
        return cls(kind=cls.API_KEY, surface=surface, api_key=api_key, client_name=client_name)

    @classmethod
    def for_agent(cls, agent: Any, *, on_behalf_of: Actor) -> Actor:
        return cls(kind=cls.AGENT, surface="agent", agent=agent, on_behalf_of=on_behalf_of)

    @classmethod
    def for_operator(cls, *, name: str = "", surface: str = "cli") -> Actor:
        """Someone with shell access running a management command (or the system's own
        background work, `surface="task"`): trusted like an admin of every workspace,
        but never a reviewer (only identified people decide)."""
        return cls(kind=cls.OPERATOR, surface=surface, client_name=name or getpass.getuser())

    @classmethod
    def for_identity_provider(cls) -> Actor:
        """Single sign-on applying a person's groups at login: trusted to manage the
        memberships it grants, never a reviewer."""
        return cls(kind=cls.OPERATOR, surface="sso", client_name="oidc")

    @classmethod
    def for_workflow_run(cls, *, workspace_id: int, source: str, person_id: int | None, identity: str = "") -> Actor:
        """The authority a workflow run's steps act with, in a worker: its starter's, as
        checked when the run started (`workflow_run_start`), confined to the run's
        workspace and to reading, running and proposing. Rebuilt from the run's row
        with no query, so a step pays nothing for it; `identity` is the starter's
        `identity_label`, so four eyes still sees a key's holder and its creator."""
        actor = cls(
            kind=cls.RUN, surface="workflow", client_name=source, workspace_id=workspace_id, person_id=person_id
        )
        actor._run_identities = _parse_identity_label(identity)
        return actor

    # --- identity ---------------------------------------------------------------------
    @property
    def identity(self) -> tuple[str, int | str]:
        """The first of `identities`: the one answerable party a label names first."""
        return self.identities[0]

    @property
    def identities(self) -> tuple[tuple[str, int | str], ...]:
        """Everyone answerable for what this actor does, compared by four eyes.

        A key answers for its owner (or itself when it has none) AND for the person who
        created it: an admin cannot mint an owner-less key, propose through it and
        approve the result herself.
        """
        if self.kind == self.USER:
            return (("user", self.user.pk),)
        if self.kind == self.API_KEY:
            key = self.api_key
            holder = ("user", key.owner_id) if key.owner_id else ("api_key", key.pk)
            creator = ("user", key.created_by_id) if key.created_by_id else None
            return (holder,) if creator in (None, holder) else (holder, creator)
        if self.kind == self.AGENT:
            return self.on_behalf_of.identities
        if self.kind == self.RUN:
            if self._run_identities:
                return self._run_identities
            # A run recorded before runs kept their starter's identities.
            return (("user", self.person_id) if self.person_id else ("run", self.client_name),)
        return (("operator", self.client_name),)

    @property
    def identity_label(self) -> str:
        """`identities` as recorded on a proposal: `user:3` or `api_key:7,user:3`."""
        return ",".join(f"{kind}:{value}" for kind, value in self.identities)

    def answers_for(self, identity_label: str) -> bool:
        """Whether this actor is (one of) the parties a recorded label names."""
        recorded = set(identity_label.split(","))
        return any(f"{kind}:{value}" in recorded for kind, value in self.identities)

    def decision_refusal(self, proposer_identity: str) -> str | None:
        """Four eyes: why this actor may not decide a proposal recorded with
        `proposer_identity`, or None. Checked with `Verb.DECIDE`, which it does not replace."""
        if self.answers_for(proposer_identity):
            return gettext("You proposed this version: another person must decide it (four eyes).")
        return None

    def require_may_decide(self, proposer_identity: str) -> None:
        reason = self.decision_refusal(proposer_identity)
        if reason is not None:
            raise PermissionDenied(reason)

    @property
    def person(self) -> User | None:
        """The human behind this actor, when there is one."""
        if self.kind == self.USER:
            return self.user
        if self.kind == self.API_KEY:
            return self.api_key.owner
        if self.kind == self.AGENT:
            return self.on_behalf_of.person
        if self.kind == self.RUN and self.person_id:
            # A reference for foreign keys (started_by, proposed_by), not a loaded row.
            return User(pk=self.person_id)
        return None

    @property
    def source(self) -> str:
        """The label recorded on what this actor proposes, e.g. `mcp:ci-bot/claude`."""
        if self.kind == self.USER:
            return f"{self.surface}:{self.user.get_username()}"
        if self.kind == self.API_KEY:
            label = f"{self.surface}:{self.api_key.name}"
            return f"{label}/{self.client_name}" if self.client_name else label
        if self.kind == self.AGENT:
            return f"agent:{self.agent.key}"
        if self.kind == self.RUN:
            return self.client_name
        return f"{self.surface}:{self.client_name}"

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<Actor {self.source}>"

    def is_same_person(self, other: Actor) -> bool:
        return bool(set(self.identities) & set(other.identities))

    # --- rights -----------------------------------------------------------------------
    def role_in(self, workspace: Workspace | int) -> str | None:
        workspace_id = workspace if isinstance(workspace, int) else workspace.pk
        if self.kind == self.USER:
            if not self.user.is_active:
                return None
            if self.user.is_superuser:
                return Membership.Role.ADMIN
            return self._membership_roles().get(workspace_id)
        if self.kind == self.OPERATOR:
            return Membership.Role.ADMIN
        return None

    @property
    def is_site_admin(self) -> bool:
        """Superusers and the operator: they create workspaces and manage people's
        accounts. Inside a workspace a superuser is an admin, and still no exception to
        four eyes."""
        if self.kind == self.OPERATOR:
            return True
        return self.kind == self.USER and self.user.is_active and self.user.is_superuser

    @property
    def may_use_admin(self) -> bool:
        """Every active workspace member may use the admin (no `is_staff` needed), read
        from the roles an admin page reads anyway: one query a page (superusers: none)."""
        if self.kind != self.USER or not getattr(self.user, "is_active", False):
            return False
        return self.user.is_superuser or bool(self._membership_roles())

    RUN_VERBS = frozenset({Verb.READ, Verb.PROPOSE, Verb.WITHDRAW, Verb.RUN, Verb.SANDBOX})

    def _membership_roles(self) -> dict[int, str]:
        # One query per actor, so an admin page checking many rows stays constant; a
        # dict needs no order (the model's joins the user and workspace to sort).
        if self._roles is None:
            rows = Membership.objects.filter(user=self.user).order_by().values_list("workspace_id", "role")
            self._roles = dict(rows)
        return self._roles

    def refusal(self, verb: Verb, workspace: Workspace) -> str | None:
        """Why this actor may not `verb` in `workspace`, or None when it may."""
        verb = Verb(verb)
        phrase = VERB_PHRASES[verb]
        if self.kind == self.AGENT:
            if verb in AGENT_FORBIDDEN:
                return f"Agent '{self.agent.key}' may not do {phrase}: agents' changes always wait for a person."
            return self.on_behalf_of.refusal(verb, workspace)
        if self.kind == self.API_KEY:
            return self._key_refusal(verb, workspace, phrase)
        if self.kind == self.RUN:
            if workspace.pk != self.workspace_id:
                return f"A workflow run started by {self.client_name} acts only in its own workspace."
            return None if verb in self.RUN_VERBS else f"A workflow run may not do {phrase}."
        if self.kind == self.OPERATOR:
            return "Only identified people approve or reject; use the admin." if verb == Verb.DECIDE else None
        role = self.role_in(workspace)
        name = self.user.get_username()
        if role is None:
            return gettext("%(name)s is not a member of workspace '%(workspace)s'.") % {
                "name": name,
                "workspace": workspace.slug,
            }
        if not role_grants(role, verb):
            # The article is translated with the sentence ("a viewer", "un lecteur").

            return gettext(
                "%(name)s is %(article)s %(role)s in workspace '%(workspace)s'; %(phrase)s needs the %(needed)s role."
            ) % {
                "name": name,
                "article": _article(role),
                "role": Membership.Role(role).label.lower(),
                "workspace": workspace.slug,
                "phrase": phrase,
                "needed": MINIMUM_ROLE[verb].label.lower(),
            }
        return None

    def _key_refusal(self, verb: Verb, workspace: Workspace, phrase: str) -> str | None:
        key = self.api_key
        if key.is_revoked:
            return f"API key '{key.name}' is revoked."
        if key.workspace_id != workspace.pk:
            return f"API key '{key.name}' does not belong to workspace '{workspace.slug}'."
        scope = REQUIRED_SCOPE[verb]
        if scope is None:
            return f"API keys may not do {phrase}: only people decide and manage."
        if scope not in key.scope_set:
            return f"API key '{key.name}' lacks the '{scope}' scope needed for {phrase}."
        return None

    def belongs_to(self, workspace: Workspace) -> bool:
        """Whether `workspace` exists for this actor at all (whatever it may do there);
        outside it, rows answer as missing ones."""
        if self.kind == self.AGENT:
            return self.on_behalf_of.belongs_to(workspace)
        if self.kind == self.API_KEY:
            return self.api_key.workspace_id == workspace.pk and not self.api_key.is_revoked
        if self.kind == self.RUN:
            return workspace.pk == self.workspace_id
        return self.role_in(workspace) is not None

    def can(self, verb: Verb, workspace: Workspace) -> bool:
        return self.refusal(verb, workspace) is None

    def sees_sandbox_rows(self, workspace: Workspace) -> bool:
        """Sandbox rows are for programs (keys, agents, the operator) with the sandbox
        right; to people they stay invisible, in lists, counts and messages alike."""
        return self.kind != self.USER and self.can(Verb.SANDBOX, workspace)

    def may_publish(self, workspace: Workspace) -> bool:
        """Whether a change by this actor may go live without a second person: the
        publish right, in a workspace that does not require review of every change."""
        return self.can(Verb.PUBLISH, workspace) and not workspace.every_change_needs_review

    def require(self, verb: Verb, workspace: Workspace) -> None:
        """Raise `PermissionDenied` naming the missing role or scope."""
        reason = self.refusal(verb, workspace)
        if reason is not None:
            raise PermissionDenied(reason)

    def workspace_ids(self, verb: Verb = Verb.READ) -> list[int] | None:
        """The workspaces where this actor may `verb`; None means every workspace."""
        verb = Verb(verb)
        if self.kind == self.AGENT:
            return [] if verb in AGENT_FORBIDDEN else self.on_behalf_of.workspace_ids(verb)
        if self.kind == self.API_KEY:
            workspace = self.api_key.workspace
            return [workspace.pk] if self._key_refusal(verb, workspace, "") is None else []
        if self.kind == self.OPERATOR:
            return [] if verb == Verb.DECIDE else None
        if self.kind == self.RUN:
            return [self.workspace_id] if verb in self.RUN_VERBS else []
        if not self.user.is_active:
            return []
        if self.user.is_superuser:
            return None
        return [ws for ws, role in self._membership_roles().items() if role_grants(role, verb)]


def _parse_identity_label(label: str) -> tuple[tuple[str, int | str], ...]:
    """`identity_label`'s inverse: `api_key:7,user:3` → (("api_key", 7), ("user", 3))."""
    identities = []
    for part in filter(None, label.split(",")):
        kind, _, value = part.partition(":")
        identities.append((kind, int(value) if kind in ("user", "api_key") else value))
    return tuple(identities)


def _article(word: str) -> str:
    return pgettext("before a role", "an") if word[:1] in "aeiou" else pgettext("before a role", "a")
