"""Read queries for the review desk, each scoped to what the actor may see."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Case, CharField, Exists, F, Func, JSONField, Model, OuterRef, Q, QuerySet, Value, When
from django.db.models.functions import Cast, JSONObject
from django.utils.translation import gettext, gettext_lazy

from agents.models import (
    Agent,
    AgentTurn,
    ApprovalPolicy,
    ApprovalRequest,
    CaseResult,
    Conversation,
    ConversationMessage,
    ConversationNote,
    DebugLog,
    EvidenceRun,
    Preset,
    PromptVersion,
)
from aihummer.actors import Actor, Verb
from aihummer.exceptions import NotFound
from aihummer.ids import canonical_id
from aihummer.models import Workspace


def _scoped(queryset: QuerySet, actor: Actor, verb: Verb = Verb.READ) -> QuerySet:
    workspace_ids = actor.workspace_ids(verb)
    return queryset if workspace_ids is None else queryset.filter(workspace_id__in=workspace_ids)


def prompt_version_queue(*, actor: Actor) -> QuerySet:
    """Versions the actor may see, with what a queue row shows, in a constant number
    of queries: agent (for the stale flag), workspace, proposer and reviewer."""
    return (
        _scoped(PromptVersion.objects.all(), actor)
        .select_related("agent", "workspace", "proposed_by", "reviewed_by", "base_version")
        .defer("snapshot", "base_version__snapshot")
    )


def prompt_version_pending_count(*, actor: Actor) -> int:
    """How many proposals wait for this actor's decision."""
    return _scoped(PromptVersion.objects.pending(), actor, Verb.DECIDE).count()


def agent_pending_proposal_count(*, agent: Agent) -> int:
    """How many proposals of `agent` wait for a decision (the agent page's banner)."""
    return PromptVersion.objects.pending().filter(agent=agent).count()


def prompt_version_get(*, actor: Actor, pk: int | str) -> PromptVersion:
    """One version with its agent, live version and base, or NotFound (for a row of
    another workspace or a sandbox row alike)."""
    version = (
        _scoped(PromptVersion.objects.all(), actor)
        .select_related(
            "agent__live_version",
            "agent__workspace",
            "workspace__approval_policy",
            "base_version",
            "proposed_by",
            "reviewed_by",
        )
        .filter(pk=pk)
        .first()
    )
    if version is None:
        raise NotFound("Unknown version.")
    return version


def agent_get(*, actor: Actor, pk: int | str) -> Agent:
    agent = (
        _scoped(Agent.objects.all(), actor).select_related("live_version", "workspace", "preset").filter(pk=pk).first()
    )
    if agent is None:
        raise NotFound("Unknown agent.")
    return agent


def agent_versions(*, agent: Agent) -> QuerySet:
    """An agent's versions, newest first, for its history page."""
    return (
        PromptVersion.objects.filter(agent=agent)
        .select_related("proposed_by", "reviewed_by", "base_version")
        .defer("snapshot", "base_version__snapshot")
        .order_by("-number")
    )


def agent_version_get(*, agent: Agent, number: int | str) -> PromptVersion:
    version = (
        PromptVersion.objects.filter(agent=agent, number=number)
        .select_related("proposed_by", "reviewed_by", "base_version", "agent__live_version")
        .first()
        if canonical_id(str(number))
        else None
    )
    if version is None:
        raise NotFound(f"Agent '{agent.key}' has no version {number}.")
    return version


def workspace_rows(model: type[Model], *, actor: Actor, workspace: Workspace) -> QuerySet:
    """`model`'s rows of `workspace` that `actor` may read (sandbox rows hidden)."""
    if not actor.belongs_to(workspace):
        return model.objects.none()
    return _scoped(model.objects.filter(workspace=workspace), actor)


def workspace_row_get(model: type[Model], *, actor: Actor, workspace: Workspace, noun: str, **lookup: object) -> Model:
    """One row of `workspace`, or NotFound naming `noun`."""
    row = _one(workspace_rows(model, actor=actor, workspace=workspace).filter(**lookup))
    if row is None:
        value = next(iter(lookup.values()), "")
        raise NotFound(f"Unknown {noun} '{value}'.")
    return row


def _one(queryset: QuerySet) -> Model | None:
    """The row a unique lookup names, or None. Unlike `.first()`, no ORDER BY: the
    models' default ordering (by workspace slug) would add a join to every lookup."""
    try:
        return queryset.get()
    except queryset.model.DoesNotExist:
        return None


# Model calls per page of a turn: a 256-call turn is 13 pages.
DEBUG_LOGS_PER_PAGE = 20


def debug_log_page(*, turn: AgentTurn, number: int | str | None) -> Page:
    """One page of `turn`'s model calls, in order, each with `sent_system_prompt` and
    `sent_tools`: what the call sent, put back together where an incremental log left
    them blank (the call before's). `messages` stays what the log stores: for an
    incremental log, what the call added to the conversation of the calls before it.
    A page number out of range gives the last page."""
    # all_objects: a sandbox turn's logs are sandbox rows too.
    logs = DebugLog.all_objects.filter(turn=turn).order_by("sequence")
    page = Paginator(logs, DEBUG_LOGS_PER_PAGE).get_page(number)
    system_prompt, tools = None, None
    for log in page.object_list:
        if not log.incremental or log.system_prompt:
            system_prompt = log.system_prompt
        if not log.incremental or log.tools_offered:
            tools = log.tools_offered
        if system_prompt is None:  # the first calls of a later page: from the pages before
            system_prompt = _latest_stored(logs, log.sequence, "system_prompt", "")
        if tools is None:
            tools = _latest_stored(logs, log.sequence, "tools_offered", [])
        log.sent_system_prompt, log.sent_tools = system_prompt, tools
    return page


# --- where a turn came from (the turns list's origin filter, the turn page's links) -------
TURN_ORIGINS = [
    ("evidence", gettext_lazy("Evidence runs")),
    ("try_it", gettext_lazy("Try it (dry runs)")),
    ("workflow", gettext_lazy("Workflow steps")),
    ("conversation", gettext_lazy("Conversations")),
    ("direct", gettext_lazy("Direct (API, MCP, CLI)")),
]


def _step_runs() -> QuerySet:
    # Workflows' step rows, reached through their relation to turns: agents never
    # import workflows (models import downward).
    return AgentTurn._meta.get_field("step_runs").related_model.objects


def agent_turns_from(queryset: QuerySet, origin: str) -> QuerySet:
    """The turns of `queryset` that came from `origin` (one of TURN_ORIGINS); a
    delegated turn counts with its parent, and a workflow step's earlier, failed attempt
    with its step (through the step's attempt log, on PostgreSQL: as the turn page)."""

    def came_from(ref: str, agent: str) -> dict[str, Q]:
        return {
            "evidence": Exists(CaseResult.objects.filter(turn_id=OuterRef(ref))),
            "conversation": Exists(ConversationMessage.objects.filter(turn_id=OuterRef(ref))),
            "workflow": Exists(_step_runs().filter(turn_id=OuterRef(ref))) | _an_earlier_attempt(ref, agent),
        }

    own, parents = came_from("pk", "agent_id"), came_from("parent_id", "parent__agent_id")
    kinds = {kind: Q(own[kind]) | Q(parents[kind]) for kind in own}
    kinds["try_it"] = Q(dry_run=True) & ~kinds["evidence"]
    kinds["direct"] = Q(dry_run=False) & ~kinds["workflow"] & ~kinds["conversation"]
    return queryset.filter(kinds[origin]) if origin in kinds else queryset


def _an_earlier_attempt(ref: str, agent: str) -> Q:
    """The turn `ref` names was an earlier attempt of a step: the step's row points at its
    newest turn only, its attempt log at the others. Among the steps of the turn's agent
    (the foreign key's index), not every step's log; nothing on a database without JSON
    containment (SQLite), as on the turn page."""
    if not connection.features.supports_json_field_contains:
        return Q(pk__in=[])
    logged = Func(JSONObject(turn_id=OuterRef(ref)), function="JSONB_BUILD_ARRAY", output_field=JSONField())
    return Q(Exists(_step_runs().filter(agent_id=OuterRef(agent), attempt_log__contains=logged)))


@dataclass(frozen=True)
class TurnOrigin:
    """Where one turn came from, with what its page links to."""

    kind: str
    step: Model | None = None  # a workflow step (run_id, name)
    conversation_id: int | None = None
    evidence_version_id: int | None = None


def agent_turn_origin(*, turn: AgentTurn) -> TurnOrigin:
    """The origin of `turn` (or of its parent, for a delegated turn), in at most four
    queries."""
    ids = [turn.pk, *([turn.parent_id] if turn.parent_id else [])]
    steps = _step_runs().only("run_id", "name")
    step = steps.filter(turn_id__in=ids).first()
    if step is None and not turn.dry_run and connection.features.supports_json_field_contains:
        # An earlier attempt's turn: the step's row points at its newest turn only. Among
        # the steps its agent ran (the foreign key's index), not every step's log.
        step = steps.filter(agent_id=turn.agent_id, attempt_log__contains=[{"turn_id": turn.pk}]).first()
    if step is not None:
        return TurnOrigin("workflow", step=step)
    message = ConversationMessage.objects.filter(turn_id__in=ids).values_list("conversation_id", flat=True).first()
    if message is not None:
        return TurnOrigin("conversation", conversation_id=message)
    version = CaseResult.objects.filter(turn_id__in=ids).values_list("run__version_id", flat=True).first()
    if version is not None:
        return TurnOrigin("evidence", evidence_version_id=version)
    return TurnOrigin("try_it" if turn.dry_run else "direct")


def _latest_stored(logs: QuerySet, before: int, field: str, blank: object) -> object:
    value = logs.filter(sequence__lt=before).exclude(**{field: blank}).order_by("-sequence")
    return value.values_list(field, flat=True).first() or blank


# --- evidence -------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvidenceRow:
    """One case of an evidence run, its live and candidate results side by side."""

    case_name: str
    live: CaseResult | None
    candidate: CaseResult | None

    @property
    def is_regression(self) -> bool:
        return bool(self.live and self.live.passed and not (self.candidate and self.candidate.passed))

    @property
    def is_fix(self) -> bool:
        return bool(self.candidate and self.candidate.passed and not (self.live and self.live.passed))


@dataclass(frozen=True)
class EvidenceView:
    """What the review page shows of a proposal's evidence: its newest run, the rows,
    and the judge's band (empty when it gave no score)."""

    run: EvidenceRun | None
    rows: list[EvidenceRow] = field(default_factory=list)

    @property
    def regressions(self) -> list[str]:
        return [row.case_name for row in self.rows if row.is_regression]

    @property
    def judge_band(self) -> str:
        if self.run is None or self.run.judge_status != EvidenceRun.JudgeStatus.DONE:
            return ""
        from agents.judge import band  # here: the judge's module loads pydantic (its answer's model)

        return band(self.run.judgement.get("overall"))

    @property
    def judge_band_label(self) -> str:
        """The band in the reader's language (`judge_band` stays the value CSS and programs read)."""
        labels = {
            "exemplary": gettext("exemplary"),
            "good": gettext("good"),
            "improvable": gettext("improvable"),
            "critical": gettext("critical"),
        }
        return labels.get(self.judge_band, self.judge_band)


def evidence_for_review(*, version: PromptVersion) -> EvidenceView:
    """The newest evidence run of `version` with its results, in two queries."""
    run = (
        EvidenceRun.objects.filter(version=version)
        .select_related("live_version")
        .defer("live_version__snapshot")
        .first()
    )
    if run is None:
        return EvidenceView(run=None)
    sides: dict[str, dict[str, CaseResult]] = {}
    for result in run.results.order_by("case_name", "side"):
        sides.setdefault(result.case_name, {})[result.side] = result
    rows = [
        EvidenceRow(case_name=name, live=pair.get(CaseResult.Side.LIVE), candidate=pair.get(CaseResult.Side.CANDIDATE))
        for name, pair in sides.items()
    ]
    return EvidenceView(run=run, rows=rows)


# --- by key, for programs (MCP, API): sandbox rows for those who use sandboxes ------------
# Programs resolve what they created, sandbox rows too (`all_objects`), when their actor
# may use sandboxes; to people (admin pages, REST through a session or a token) a sandbox
# row answers as a missing one, whatever their role: `Actor.sees_sandbox_rows` is the rule.
def _require_read(actor: Actor, workspace: Workspace, noun: str) -> None:
    # Outside the actor's workspaces a row answers exactly as a missing one; inside,
    # a missing right is said plainly (e.g. a key without the read scope).
    if not actor.belongs_to(workspace):
        raise NotFound(f"Unknown {noun}.")
    actor.require(Verb.READ, workspace)


def _rows(model: type, actor: Actor, workspace: Workspace, *, include_sandbox: bool) -> QuerySet:
    """`model`'s rows of `workspace`; sandbox ones too when asked and allowed."""
    if include_sandbox:
        actor.require(Verb.SANDBOX, workspace)
    with_sandbox = include_sandbox and actor.sees_sandbox_rows(workspace)
    return (model.all_objects if with_sandbox else model.objects).filter(workspace=workspace)


def _resolvable(model: type, actor: Actor, workspace: Workspace) -> QuerySet:
    """`model`'s rows of `workspace` a caller may name: sandbox ones only for programs
    that may use sandboxes (for everyone else they answer as missing)."""
    return _rows(model, actor, workspace, include_sandbox=actor.sees_sandbox_rows(workspace))


def agent_get_by_key(*, actor: Actor, workspace: Workspace, key: str) -> Agent:
    """The agent `key` of `workspace` with its live version and preset, or NotFound
    (another workspace's answers the same)."""
    _require_read(actor, workspace, "agent")
    agents = _resolvable(Agent, actor, workspace).select_related("live_version", "workspace", "preset")
    agent = _one(agents.filter(key=key))
    if agent is None:
        raise NotFound(f"Unknown agent '{key}'.")
    return agent


def approval_policy_history(*, actor: Actor, workspace: Workspace) -> QuerySet:
    """Every change of the workspace's approval policy (who, when, why, the values it
    left), newest first; any member reads it."""
    _require_read(actor, workspace, "workspace")
    return ApprovalPolicy.history.filter(workspace_id=workspace.pk).select_related("history_user")


def agent_list(*, actor: Actor, workspace: Workspace, include_sandbox: bool = False) -> QuerySet:
    """The workspace's agents by key, with preset and live version number, in one query."""
    _require_read(actor, workspace, "workspace")
    return (
        _rows(Agent, actor, workspace, include_sandbox=include_sandbox)
        .select_related("preset", "live_version")
        .defer("live_version__snapshot")
        .order_by("key")
    )


def agent_open_proposals(*, agent: Agent) -> QuerySet:
    """The agent's pending versions, oldest first."""
    return (
        PromptVersion.all_objects.pending()
        .filter(agent=agent)
        .select_related("proposed_by", "base_version")
        .defer("base_version__snapshot")
        .order_by("number")
    )


def preset_default(*, workspace: Workspace) -> Preset | None:
    """The preset agents without their own run on."""
    return Preset.objects.for_workspace(workspace).active().first()


def preset_get_by_key(*, actor: Actor, workspace: Workspace, key: str) -> Preset:
    """The preset `key` of `workspace`, or NotFound."""
    _require_read(actor, workspace, "preset")
    preset = _resolvable(Preset, actor, workspace).select_related("credential").filter(key=key).first()
    if preset is None:
        raise NotFound(f"Unknown preset '{key}'.")
    return preset


def preset_list(*, actor: Actor, workspace: Workspace, include_sandbox: bool = False) -> QuerySet:
    """The workspace's presets by key."""
    _require_read(actor, workspace, "workspace")
    return _rows(Preset, actor, workspace, include_sandbox=include_sandbox).order_by("key")


def debug_log_get(*, actor: Actor, workspace: Workspace, pk: int) -> DebugLog:
    """One model call's debug log (a sandbox turn's too, for sandbox users), or NotFound."""
    _require_read(actor, workspace, "debug log")
    log = _resolvable(DebugLog, actor, workspace).select_related("turn").filter(pk=pk).first()
    if log is None:
        raise NotFound(f"Unknown debug log {pk}.")
    return log


def debug_log_ids(*, turn: AgentTurn) -> list[int]:
    """The ids of `turn`'s model calls, in order. The caller resolved the turn (a
    sandbox turn only for who may see it): its logs are sandbox rows too, so
    `all_objects`, where `turn.debug_logs` would hide them."""
    return list(DebugLog.all_objects.filter(turn=turn).order_by("sequence").values_list("pk", flat=True))


def approval_requests_waited_for(*, turn_id: int | None = None, run_id: object = None) -> list[ApprovalRequest]:
    """The calls a waiting turn (or a waiting run's steps) wait for a person to decide,
    oldest first: pending requests, and approved calls whose outcome is unknown. The
    caller resolved the turn or run (a sandbox one only for who may see it), hence
    `all_objects`."""
    requests = ApprovalRequest.all_objects.waiting_for_a_person().order_by("created_at", "pk")
    if turn_id is not None:
        return list(requests.filter(turn_id=turn_id))
    return list(requests.filter(run_id=run_id))


def debug_log_as_sent(log: DebugLog) -> tuple[str, list, list]:
    """What one model call sent: its system prompt and tools (an incremental log leaves
    them blank when they are the call before's) and its conversation (every earlier
    call's new messages, then its own; `dropped_exchanges` says how many the context
    budget left out)."""
    if not log.incremental:
        return log.system_prompt, log.tools_offered, log.messages
    logs = DebugLog.all_objects.filter(turn_id=log.turn_id).order_by("sequence")
    system_prompt = log.system_prompt or _latest_stored(logs, log.sequence, "system_prompt", "")
    tools = log.tools_offered or _latest_stored(logs, log.sequence, "tools_offered", [])
    earlier = logs.filter(sequence__lt=log.sequence).values_list("messages", flat=True)
    messages = [message for added in earlier for message in added] + log.messages
    return system_prompt, tools, messages


# --- conversations ---------------------------------------------------------------------
def conversation_list(
    *, actor: Actor, workspace: Workspace, include_archived: bool = False, agent_key: str | None = None
) -> QuerySet:
    """The workspace's conversations (sandbox ones never listed) with their agent, in
    one query; by default without those the agent's `runtime_policy.session` takes out
    of the list (kept: `include_archived` shows them)."""
    _require_read(actor, workspace, "workspace")
    rows = Conversation.objects.filter(workspace=workspace)
    if agent_key is not None:
        rows = rows.filter(agent__key=agent_key)
    if not include_archived:
        rows = rows.listed()  # after the agent filter only: ranks are per agent
    return rows.select_related("agent", "answering_agent")


def conversation_get(*, actor: Actor, workspace: Workspace, pk: int | str) -> Conversation:
    """One conversation of `workspace`, or NotFound (another workspace's, a missing one
    and, for a person, a sandbox one answer the same)."""
    _require_read(actor, workspace, "conversation")
    rows = _resolvable(Conversation, actor, workspace).select_related("agent", "answering_agent")
    row = _one(rows.filter(pk=pk)) if canonical_id(str(pk)) else None
    if row is None:
        raise NotFound(f"Unknown conversation '{pk}'.")
    return row


def conversation_messages(*, conversation: Conversation) -> QuerySet:
    """A conversation's messages (sandbox ones of a sandbox conversation too: the
    conversation was resolved for this actor)."""
    return ConversationMessage.all_objects.filter(conversation=conversation)


def conversation_notes(*, conversation: Conversation, limit: int = 50) -> list[ConversationNote]:
    """A conversation's newest summaries and memory notes, oldest first."""
    rows = list(ConversationNote.all_objects.filter(conversation=conversation).order_by("-pk")[:limit])
    rows.reverse()
    return rows


# --- an execution tree (issue 29: the turn page shows it) --------------------------------
# Turns one tree's view draws at most. The policy bounds a tree's shape (depth ≤ 4, ≤ 5
# children per parent), not how often a long turn delegates over its iterations.
EXECUTION_TREE_MAX_TURNS = 200


@dataclass
class TreeNode:
    turn: AgentTurn
    offset_ms: int  # when it started, after the root started
    children: list[TreeNode] = field(default_factory=list)


@dataclass(frozen=True)
class ExecutionTree:
    roots: list[TreeNode]  # the root turn; more than one only when the root row was deleted
    turns: int
    truncated: bool  # more than EXECUTION_TREE_MAX_TURNS: the earliest started are drawn


def execution_tree(*, turn: AgentTurn) -> ExecutionTree | None:
    """The execution tree `turn` belongs to (its root turn and every turn under it,
    nested by parent, each in the order it started), or None for a turn that is a tree
    of one. One query; sandbox turns never appear."""
    root_id = turn.root_id or turn.pk
    rows = list(
        AgentTurn.objects.filter(workspace_id=turn.workspace_id)
        .filter(Q(pk=root_id) | Q(root_id=root_id))
        .only("pk", "parent_id", "agent_key", "status", "error_kind", "depth", "started_at", "finished_at")
        .order_by("started_at", "pk")[: EXECUTION_TREE_MAX_TURNS + 1]
    )
    if len(rows) <= 1:
        return None
    shown = rows[:EXECUTION_TREE_MAX_TURNS]
    start = shown[0].started_at
    nodes = {row.pk: TreeNode(row, int((row.started_at - start).total_seconds() * 1000)) for row in shown}
    roots = []
    for node in nodes.values():
        parent = nodes.get(node.turn.parent_id)
        (parent.children if parent is not None else roots).append(node)
    return ExecutionTree(roots=roots, turns=len(shown), truncated=len(rows) > EXECUTION_TREE_MAX_TURNS)


# --- the review list: both kinds of request in one queue --------------------------------
REVIEW_KINDS = ("proposal", "action")


def _review_rows(queryset: QuerySet, kind: str, **columns: object) -> QuerySet:
    # Every column is an annotation, in one order for both tables: a UNION pairs its
    # columns by position.
    return (
        queryset.order_by()
        .annotate(
            item_kind=Value(kind, output_field=CharField()),
            item_pk=F("pk"),
            item_label=columns["label"],
            item_detail=Cast(columns["detail"], CharField()),
            item_source=F(columns["source"]),
            item_workspace=F("workspace__slug"),
            item_status=columns.get("status", F("status")),
            item_created_at=F("created_at"),
        )
        .values(
            "item_kind",
            "item_pk",
            "item_label",
            "item_detail",
            "item_source",
            "item_workspace",
            "item_status",
            "item_created_at",
        )
    )


def review_item_counts(*, actor: Actor, status: str = "pending") -> dict[str, int]:
    """How many proposals and action requests the review list holds for `status`
    (`"all"`: every status), per kind: one COUNT per table."""
    counts = {}
    for kind, model in (("proposal", PromptVersion), ("action", ApprovalRequest)):
        queryset = _scoped(model.objects.all(), actor)
        counts[kind] = (queryset if status == "all" else _with_status(queryset, kind, status)).count()
    return counts


# An approved call whose outcome is unknown waits for a person again: it is listed with
# the pending ones, as `unknown`.
_ACTION_STATUS = Case(
    When(progress=ApprovalRequest.Progress.UNKNOWN, then=Value("unknown")),
    default=F("status"),
    output_field=CharField(),
)


def _with_status(queryset: QuerySet, kind: str, status: str) -> QuerySet:
    if kind != "action":
        return queryset.filter(status=status)
    if status == "pending":
        return queryset.waiting_for_a_person()
    if status == "unknown":
        return queryset.filter(progress=ApprovalRequest.Progress.UNKNOWN)
    return queryset.filter(status=status).exclude(progress=ApprovalRequest.Progress.UNKNOWN)


def review_item_list(*, actor: Actor, kind: str = "", status: str = "pending") -> QuerySet:
    """Prompt proposals and action requests the actor may read, in one queue, oldest
    first (what waited longest comes first): rows of dicts `item_*`, no sandbox row
    (both models' default managers hide them). `kind` narrows to one kind."""
    parts = []
    if kind in ("", "proposal"):
        versions = _scoped(PromptVersion.objects.all(), actor)
        if status != "all":
            versions = _with_status(versions, "proposal", status)
        parts.append(_review_rows(versions, "proposal", label=F("agent__key"), detail=F("number"), source="source"))
    if kind in ("", "action"):
        requests = _scoped(ApprovalRequest.objects.all(), actor)
        if status != "all":
            requests = _with_status(requests, "action", status)
        parts.append(
            _review_rows(
                requests,
                "action",
                label=F("agent_key"),
                detail=F("tool_name"),
                source="actor_source",
                status=_ACTION_STATUS,
            )
        )
    rows = parts[0] if len(parts) == 1 else parts[0].union(parts[1], all=True)
    return rows.order_by("item_created_at", "item_kind", "item_pk")
