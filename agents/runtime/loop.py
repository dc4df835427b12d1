"""The agent runtime: one turn = render the snapshot, call the model, run the tools it
asks for, feed the results back, until a final answer or the iteration limit.

Every model call is recorded as a DebugLog. Nothing here holds a database transaction
across a provider call. A turn is the unit of work of a workflow step, so its own
statements are counted (`bench/agent_turns.py`): a plain turn reads its agent with
everything it needs in one query, then writes its row, with its outcome, and its one
debug log in one statement (`agents.runtime.prepared`), in the transaction of the
caller's result or with that result in the same statement (`compose`); a tool-calling
turn adds one insert per model call. Totals are summed
in memory (child turns, in threads, write their own rows) and written with the outcome.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import nullcontext
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import FilteredRelation, Q, QuerySet
from django.utils import timezone

from agents import catalog
from agents.models import Agent, AgentTurn, Preset, PromptVersion
from agents.policy import parse_runtime_policy
from agents.policy_models import DirectCompletionPolicy, RuntimePolicy
from agents.redaction import DeltaRedactor, Redactor, redact_response, workspace_ciphertexts
from agents.rendering import RenderedPrompt, render_system_prompt
from agents.runtime import (
    effects,  # noqa: F401 - registers mail_send and http_request
    tree,
)
from agents.runtime.approvals import (
    TurnWaiting,
    approval_tools,
    ends_on_reject,
    hold,
    pause,
    record,
    resume_context,
    resume_messages,
)
from agents.runtime.context import NO_HISTORY, History, prepare_messages
from agents.runtime.debug import DebugLogWriter
from agents.runtime.errors import TurnFailed
from agents.runtime.prepared import Joined, PreparedSelect
from agents.runtime.providers import complete, get_provider
from agents.runtime.providers.base import Message, ModelRequest, Provider, ProviderError, ToolCall, Usage
from agents.runtime.tools import REGISTRY, Handoff, ToolError, TurnContext, available_tools
from agents.services import preset_api_key
from aihummer import metrics
from aihummer.actors import Actor, Verb
from aihummer.db import Tail

logger = logging.getLogger(__name__)

TURN_OUT_OF_TIME = "The turn ran out of time before a final answer."


# --- entry points ---------------------------------------------------------------------
def agent_turn_run(
    *,
    agent: Agent,
    message: str,
    actor: Actor,
    version: PromptVersion | None = None,
    context: dict | None = None,
    dry_run: bool = False,
) -> AgentTurn:
    """Run one turn of `agent` (its live version, or `version`) on `message`.

    Returns the finished AgentTurn: `succeeded` with an answer, or `failed` with an
    error that says what to fix. Refuses (PermissionDenied) before anything runs when
    the actor may not run agents here. The turn ends within AIHUMMER_TURN_TIMEOUT_SEC.
    """
    prepared = agent_turn_prepare(
        agent=agent, message=message, actor=actor, version=version, context=context, dry_run=dry_run
    )
    return agent_turn_complete(prepared)


def agent_turn_prepare(
    *,
    agent: Agent,
    message: str,
    actor: Actor,
    version: PromptVersion | None = None,
    context: dict | None = None,
    dry_run: bool = False,
    timeout_seconds: float | None = None,
    history: History = NO_HISTORY,
    read: Callable[[], Agent | None] | None = None,
) -> PreparedTurn:
    """Everything `agent_turn_run` settles before the first model call, in one query
    and no write: a caller may read it in the transaction of its own claim (a workflow
    step does) and run it with `agent_turn_complete` after that commits. Raises as
    `agent_turn_run` does (PermissionDenied, ValidationError, Agent.DoesNotExist).

    `timeout_seconds` (a step's) shortens the turn's deadline: its model calls, tools
    and children stop there, so the turn ends by itself, never outliving its caller.

    `history`: a conversation's earlier messages (`agents.runtime.conversations`),
    sent before the message under `runtime_policy.context`; with some, the turn is no
    first turn (onboarding is not rendered).

    `read`: the agent's row read already, with all a turn needs (`turn_agent_joined`,
    in a workflow step's claim); by default the turn reads it here, in one query."""
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.RUN, agent.workspace)
    if version is not None and version.agent_id != agent.pk:
        raise ValidationError({"version": f"Version {version.pk} is not a version of agent '{agent.key}'."})
    if not isinstance(message, str) or not message.strip():
        raise ValidationError({"message": "Give a message for the agent."})
    prepared = _prepare(
        read=read or (lambda: _AGENT_BY_PK.first(pk=agent.pk)),
        version=version,
        message=message,
        actor=actor,
        context=context,
        dry_run=dry_run,
        parent=None,
        depth=0,
        depth_limit=tree.TREE_MAX_DEPTH,
        deadline=time.monotonic() + min(settings.AIHUMMER_TURN_TIMEOUT_SEC, timeout_seconds or float("inf")),
        history=history,
    )
    if prepared is None:
        raise Agent.DoesNotExist(f"Agent '{agent.key}' no longer exists.")
    return prepared


def agent_turn_run_child(*, parent: AgentTurn, agent_key: str, message: str, actor: Actor) -> str:
    """Run agent `agent_key` as a child of `parent` from whatever process calls this, as
    `parent`'s `delegate` tool does in its own: under the limits its ancestors' versions
    hand down (depth, tools denied, `max_per_parent` counting the children it has), the
    tree's `max_concurrent` shared with every other process's children, and within
    AIHUMMER_TURN_TIMEOUT_SEC of the root's start. Returns the child's answer; raises
    ToolError with what a model would read (a refusal, the child's failure), and
    PermissionDenied when the actor may not run agents here."""
    chain = [parent]
    while chain[0].parent_id is not None:
        chain.insert(0, AgentTurn.all_objects.select_related("version").get(pk=chain[0].parent_id))
    if any(turn.version is None for turn in chain):
        raise ToolError("Delegation refused: a version of this execution tree was deleted.")
    policies = [parse_runtime_policy(turn.version.snapshot["runtime_policy"]) for turn in chain]
    agent = _AGENT_BY_PK.first(pk=parent.agent_id)
    if agent is None:
        raise ToolError(f"Delegation refused: agent '{parent.agent_key}' no longer exists.")
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.RUN, agent.workspace)
    branch, above = tree.branch_of(
        chain[0].pk, [(turn.depth, policy) for turn, policy in zip(chain, policies, strict=True)]
    )
    elapsed = (timezone.now() - chain[0].started_at).total_seconds()
    context = TurnContext(
        agent=agent,
        version=parent.version,
        actor=actor,
        turn=parent,
        policy=policies[-1],
        depth=parent.depth,
        deadline=time.monotonic() + settings.AIHUMMER_TURN_TIMEOUT_SEC - elapsed,
        dry_run=False,
        depth_limit=tree.depth_limit(policies[-1].children, above=above),
        branch=branch,
        delegations=AgentTurn.all_objects.filter(parent=parent).count(),
    )
    return delegate_to(context, agent_key=agent_key, message=message)


# A caller's result written in the turn's own statement: given the finished turn, a
# tail for that statement (`aihummer.db.Tail`) and what to do with its row, or None.
Compose = Callable[[AgentTurn], tuple[Tail, Callable[[tuple | None], None]] | None]


def agent_turn_complete(
    prepared: PreparedTurn, *, then: Callable[[AgentTurn], None] | None = None, compose: Compose | None = None
) -> AgentTurn:
    """Run a prepared turn to its end and record it: the turn row, its last debug log
    and, when given, `then(turn)` (a step's result) in one transaction. The turn's
    time started when it was prepared.

    `compose(turn)` may instead give the result as a tail of the statement writing the
    turn and its log (a plain turn's, on PostgreSQL: `DebugLogWriter.composable`): then
    the three are one statement (its own commit in autocommit), and
    `done(row)` gets the tail's row after it; `then` is not called. When it gives None,
    or the turn cannot take a tail (a tool-calling turn has its row already, a waiting
    turn records its request), it is `then` in the transaction as above."""
    return _complete(prepared, then=then, compose=compose)


def agent_run_test(*, agent: Agent, message: str, actor: Actor, version: PromptVersion | None = None) -> AgentTurn:
    """Try an agent (live or any stored version) without side effects: self-edit and
    delegate calls are recorded in the debug log, not executed."""
    return agent_turn_run(agent=agent, message=message, actor=actor, version=version, dry_run=True)


def turn_agents() -> QuerySet:
    """Agents with all a turn reads of them, in one query: the row as stored now (a
    caller's copy may hold an old live version or flag), its live version, its
    workspace, its own preset and the workspace's default (`default_preset`, set only
    when there is one), each with its credential."""
    default = FilteredRelation("workspace__presets", condition=Q(workspace__presets__is_active=True))
    return (
        Agent.all_objects.annotate(default_preset=default, workspace_ciphertexts=workspace_ciphertexts("workspace_id"))
        .select_related(
            "live_version",
            "workspace",
            "preset__credential",
            "default_preset__credential",
            "tool_settings",  # which calls wait for a person (agents.runtime.approvals)
            "workspace__tool_policy",
        )
        .order_by()  # one row at most: no ORDER BY (the model's ordering joins the workspace)
    )


# Every turn's read, compiled once per process (`agents.runtime.prepared`).
_AGENT_BY_PK = PreparedSelect(lambda pk: turn_agents().filter(pk=pk), pk=-7_000_001)


def turn_agent_joined(pk: str) -> Joined:
    """A turn's agent read (`turn_agents`) as a subquery of another statement, the agent
    being the one whose id is the SQL `pk` (a column of that statement): a workflow
    step's claim brings its agent this way, in its own round trip."""
    return _AGENT_BY_PK.joined(pk=pk)


# --- the turn -------------------------------------------------------------------------
@dataclass
class _Setup:
    """What a turn settles before its first model call."""

    preset: Preset | None
    policy: RuntimePolicy | None = None
    rendered: RenderedPrompt | None = None
    failure: str = ""  # why no model call can be made (a debug log says it too)
    failure_kind: str = AgentTurn.ErrorKind.NOT_CONFIGURED
    provider: Provider | None = None
    api_key: str = ""


@dataclass
class PreparedTurn:
    """A turn read and set up, not yet run: its AgentTurn is unsaved until it is
    recorded (or until a tool needs it to exist: a child turn points at it)."""

    turn: AgentTurn
    agent: Agent
    version: PromptVersion
    setup: _Setup
    redactor: Redactor
    message: str
    actor: Actor
    dry_run: bool
    depth: int
    depth_limit: int  # the parent's limit (`agents.runtime.tree.depth_limit`'s `above`)
    deadline: float
    history: History = NO_HISTORY
    branch: tree.Branch = tree.ROOT  # where it sits in its execution tree
    handoff: Handoff | None = None  # a conversation's turn: where its `handoff` tool sends the conversation
    # A turn resumed after a person decided a held call (`agent_turn_resume`): its
    # messages so far and how many of them its debug logs hold.
    resume: list[Message] | None = None
    logged: int = 0
    # Where a paused turn's request comes from: (kind, run id, step), for a workflow step.
    origin: tuple[str, str, str] | None = None
    end_with: str = ""  # a refused call ends the resumed turn (tool settings' on_reject = end)
    # What the caller rendered the prompt with (`render_system_prompt`'s context): a
    # paused turn keeps it, with its history, for the turn resumed after the decision.
    render_context: dict | None = None
    # Told of the turn as it runs (`agents.runtime.streams`): ("delta", {"text"}),
    # ("tool_call", {...}), ("tool_result", {...}); never raises into the turn.
    on_event: Callable[[str, dict], None] | None = None


def _prepare(
    *,
    read: Callable[[], Agent | None],
    version: PromptVersion | None,
    message: str,
    actor: Actor,
    context: dict | None,
    dry_run: bool,
    parent: AgentTurn | None,
    depth: int,
    depth_limit: int,
    deadline: float,
    history: History = NO_HISTORY,
    branch: tree.Branch = tree.ROOT,
) -> PreparedTurn | None:
    agent = read()
    if agent is None:
        return None
    version = version or agent.live_version
    if version is None:
        raise PermissionDenied(
            f"Agent '{agent.key}' has no approved version yet: a reviewer must approve version 1 before it runs."
        )
    setup = _setup(agent, version, context, first_turn=not history.messages)
    # Every credential secret of the workspace, replaced by value in all text this
    # turn stores: a model or a compatible server may echo the key it was called with.
    redactor = Redactor.from_ciphertexts(agent.workspace_ciphertexts)
    turn = AgentTurn(
        workspace_id=agent.workspace_id,
        agent=agent,
        agent_key=agent.key,
        version=version,
        version_number=version.number,
        parent=parent,
        root_id=branch.root_id,
        depth=depth,
        actor_source=actor.source,
        started_by=actor.person,
        dry_run=dry_run,
        message=redactor.text(message),
        is_sandbox=agent.is_sandbox,
        provider_name=setup.preset.provider_name if setup.preset else "",
        model=setup.preset.model if setup.preset else "",
        prefix_hash=setup.rendered.prefix_hash if setup.rendered else "",
    )
    return PreparedTurn(
        turn,
        agent,
        version,
        setup,
        redactor,
        message,
        actor,
        dry_run,
        depth,
        depth_limit,
        deadline,
        history,
        branch,
        render_context=context,
    )


def _complete(
    prepared: PreparedTurn, *, then: Callable[[AgentTurn], None] | None = None, compose: Compose | None = None
) -> AgentTurn:
    turn, agent, redactor = prepared.turn, prepared.agent, prepared.redactor
    log = DebugLogWriter(turn=turn, secrets=redactor.secrets)
    status, answer, error, kind = AgentTurn.Status.FAILED, "", "", AgentTurn.ErrorKind.NONE
    waiting: TurnWaiting | None = None
    try:
        answer = _loop(log, prepared)
        status = AgentTurn.Status.SUCCEEDED
    except TurnWaiting as exc:  # a held call: the turn pauses, no thread waits
        waiting, status = exc, AgentTurn.Status.WAITING
    except TurnFailed as exc:
        error, kind = str(exc), exc.kind
    except Exception as exc:  # a bug must still leave a readable, finished turn
        logger.exception("Turn %s of agent %s failed unexpectedly", turn.pk, agent.key)
        error, kind = f"Internal error ({type(exc).__name__}); it was logged.", AgentTurn.ErrorKind.INTERNAL
    turn.status, turn.finished_at, turn.error_kind = status, None if waiting else timezone.now(), kind
    turn.answer, turn.error = redactor.text(answer), redactor.text(error)
    composed = compose(turn) if compose is not None and waiting is None and log.composable else None
    if composed is not None:  # the turn, its last call's log and the caller's result: one statement
        tail, done = composed
        done(log.flush(tail))
        metrics.observe_turn(turn)
        return turn
    with transaction.atomic():  # the turn, its last call's log and the caller's result: one commit
        if turn.pk is not None:  # a tool-calling turn's row, written before its tools ran
            turn.save(update_fields=[*TOTALS, "status", "answer", "error", "error_kind", "finished_at"])
        log.flush()  # with the turn's row when it has none yet: one statement
        if waiting is not None:  # the request with the turn's waiting row
            record(waiting.request, origin=prepared.origin)
        if then is not None:
            then(turn)
    if waiting is None:
        metrics.observe_turn(turn)
    return turn


def agent_turn_resume(
    *, turn: AgentTurn, request: object, actor: Actor, then: Callable[[AgentTurn], None] | None = None
) -> AgentTurn:
    """Go on with a turn that paused on `request` (an ApprovalRequest, decided and
    carried out): its messages so far, the request's result as the held call's, then
    the loop as usual, recorded like any turn (`then(turn)` in its last transaction).
    Its time starts again now (it may have waited days)."""
    context, history = resume_context(request)
    prepared = _prepare(
        read=lambda: _AGENT_BY_PK.first(pk=turn.agent_id),
        version=turn.version,
        message=turn.message,
        actor=actor,
        context=context,  # the caller's, as the turn had it before it paused
        history=history,
        dry_run=False,
        parent=None,  # the row below is the turn's own: this one is not saved
        depth=turn.depth,
        depth_limit=tree.TREE_MAX_DEPTH,
        deadline=time.monotonic() + settings.AIHUMMER_TURN_TIMEOUT_SEC,
    )
    if prepared is None:
        raise Agent.DoesNotExist(f"Agent '{turn.agent_key}' no longer exists.")
    prepared.turn, prepared.origin = turn, getattr(request, "origin_tuple", None)
    prepared.resume, prepared.logged = resume_messages(request)
    if ends_on_reject(request):
        prepared.end_with = f"The turn ended: {request.result}"
    return _complete(prepared, then=then)


def _run_turn(*, agents: QuerySet, **options: object) -> AgentTurn | None:
    prepared = _prepare(read=lambda: next(iter(agents), None), **options)  # one row at most
    return None if prepared is None else _complete(prepared)


TOTALS = ("model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd")


def _setup(agent: Agent, version: PromptVersion, context: dict | None, *, first_turn: bool = True) -> _Setup:
    """Preset, policy, rendered prompt, provider and key; `failure` says why no model
    call can be made. No query (`turn_agents()` read all of it), but for a version that
    names another preset than the live one."""
    preset = _version_preset(agent, version)
    setup = _Setup(preset=preset)
    if preset is None:
        key = version.snapshot["preset"]
        setup.failure = (
            f"Version {version.number} of agent '{agent.key}' names preset '{key}', which no longer exists."
            if key is not None
            else f"Agent '{agent.key}' has no preset and workspace '{agent.workspace.slug}' has no default preset."
        )
        return setup
    snapshot = version.snapshot
    setup.policy = parse_runtime_policy(snapshot["runtime_policy"])
    setup.rendered = render_system_prompt(snapshot, first_turn=first_turn, today=timezone.localdate(), context=context)
    try:
        setup.api_key = preset_api_key(preset=preset)
    except ProviderError as exc:
        setup.failure, setup.failure_kind = exc.message, exc.kind
        return setup
    try:
        setup.provider = get_provider(preset.provider_name)
    except ProviderError as exc:
        setup.failure, setup.failure_kind = f"Provider error ({exc.kind}): {exc.message}", exc.kind
    return setup


def _version_preset(agent: Agent, version: PromptVersion) -> Preset | None:
    """The preset `version` names: the agent's own binding (it projects the live
    version's), or for another version (a candidate tried, or its evidence) the preset
    its snapshot names, read now; null names the workspace's default."""
    key = version.snapshot["preset"]
    bound = agent.preset if agent.preset_id else None
    if key is None or (bound is not None and bound.key == key):
        return bound if key is not None else getattr(agent, "default_preset", None)
    return Preset.all_objects.select_related("credential").filter(workspace_id=agent.workspace_id, key=key).first()


def _loop(log: DebugLogWriter, prepared: PreparedTurn) -> str:
    turn, agent, version, setup = prepared.turn, prepared.agent, prepared.version, prepared.setup
    message, actor, dry_run, deadline = prepared.message, prepared.actor, prepared.dry_run, prepared.deadline
    history, on_event, log_redactor = prepared.history, prepared.on_event, prepared.redactor
    if setup.preset is None:
        log.failed(sequence=1, provider_name="", model="", error=setup.failure)
        raise TurnFailed(setup.failure, kind=setup.failure_kind)
    if not agent.is_active and not dry_run:
        raise TurnFailed(f"Agent '{agent.key}' is disabled: enable it to run it.")
    if setup.failure:  # a missing credential or adapter: a call that could not be made
        log.failed(sequence=1, provider_name=turn.provider_name, model=turn.model, error=setup.failure)
        raise TurnFailed(setup.failure, kind=setup.failure_kind)
    preset, policy, rendered = setup.preset, setup.policy, setup.rendered
    model_info = catalog.get_model(preset.provider_name, preset.model)
    # A direct completion (`app.direct_completion.mode = always`): one call, no tool,
    # within the direct completion's output and time bounds.
    direct = policy.app.direct_completion if policy.app.direct_completion.mode == "always" else None
    tools = [] if direct else available_tools(version.snapshot["allowed_tool_names"], deny=prepared.branch.denied)
    specs = tuple(tool.spec() for tool in tools)
    max_output_tokens, call_timeout = preset.max_output_tokens, float(preset.timeout_seconds)
    if direct:
        max_output_tokens = min(max_output_tokens or direct.max_tokens, direct.max_tokens)
        call_timeout = min(call_timeout, direct.timeout_ms / 1000)
    tool_context = TurnContext(
        agent=agent,
        version=version,
        actor=actor,
        turn=turn,
        policy=policy,
        depth=prepared.depth,
        deadline=deadline,
        dry_run=dry_run,
        depth_limit=tree.depth_limit(policy.children, above=prepared.depth_limit),
        branch=prepared.branch,
        handoff=prepared.handoff,
        delegate=delegate_to,
        guarded=approval_tools(agent),
    )
    carried = (prepared.render_context, history)  # what a pause keeps for the resumed turn
    messages: list[Message] = list(prepared.resume or [Message(role="user", content=message)])
    written_at = [time.time()] * len(
        messages
    )  # when each message was added: a tool result's age for pruning.ttl_seconds
    log.messages_logged = prepared.logged  # a resumed turn's earlier logs hold its first messages
    redactor = prepared.redactor
    if prepared.end_with:
        raise TurnFailed(prepared.end_with, kind=AgentTurn.ErrorKind.REFUSED)
    for sequence in range(turn.model_calls + 1, (1 if direct else policy.max_iterations) + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TurnFailed(TURN_OUT_OF_TIME, kind=AgentTurn.ErrorKind.DEADLINE)
        prepared, dropped = prepare_messages(
            messages, policy, rendered.text, model_info, history, written_at=written_at
        )
        volatile = "\n\n".join(part for part in (rendered.volatile, history.reference) if part)
        if dropped:
            volatile += (
                f"\n[{dropped} earlier conversation round(s) or tool exchange(s) were dropped to fit "
                "runtime_policy.context.]"
            )
        request = ModelRequest(
            model=preset.model,
            system_prefix=rendered.prefix,
            system_volatile=volatile.strip(),
            messages=tuple(prepared),
            tools=specs,
            temperature=preset.temperature,
            top_p=preset.top_p,
            max_output_tokens=max_output_tokens,
            timeout_seconds=min(call_timeout, remaining),
            reasoning_effort=policy.app.reasoning_effort,
            service_tier=policy.app.service_tier,
            base_url=preset.base_url,
            stream=preset.streaming_enabled,
            api_key=setup.api_key,
        )
        started = time.monotonic()
        release_connection()
        try:
            # Redacted before anything uses it: text, tool-call arguments, raw body.
            on_delta = _delta_sink(on_event, log_redactor)
            response, error, kind = redact_response(complete(setup.provider, request, on_delta), log.secrets), "", ""
            if on_delta is not None:
                on_delta.flush()  # the held-back tail (a secret may have been split across deltas)
        except ProviderError as exc:
            # The kind from the adapter's mapping of the vendor's exception types.
            response, (error, kind) = None, _call_error(exc, request, call_timeout, direct)
        usage = response.usage if response else Usage()
        cost = _cost(model_info, usage)
        _add_totals(turn, usage, cost)
        log.call(
            sequence=sequence,
            provider=setup.provider,
            request=request,
            response=response,
            error=error,
            new_messages=messages[log.messages_logged :],
            dropped=dropped,
            usage=usage,
            cost=cost,
            latency_ms=int((time.monotonic() - started) * 1000),
            prefix_hash=rendered.prefix_hash,
        )
        if response is None:
            raise TurnFailed(error, kind=kind)
        if not response.tool_calls:
            return response.text
        messages.append(Message(role="assistant", content=response.text, tool_calls=response.tool_calls))
        written_at.append(time.time())
        log.save_turn()  # a tool may need the turn's row: a child turn points at it
        _tell(
            on_event,
            "tool_call",
            [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls],
        )
        results = _run_tools(tool_context, response.tool_calls, {tool.name for tool in tools})
        _tell(
            on_event,
            "tool_result",
            [{k: o[k] for k in ("id", "name", "outcome", "result")} for _, o in results],
        )
        messages.extend(result for result, _ in results)
        written_at.extend([time.time()] * (len(messages) - len(written_at)))
        log.tools_ran([outcome for _, outcome in results])
        if tool_context.held is not None:  # a call waits for a person: the turn pauses here
            raise pause(tool_context, messages, logged=log.messages_logged, redactor=redactor, carried=carried)
    if direct:
        raise TurnFailed(
            "The model asked for tools in a direct completion, which offers none "
            "(runtime_policy.app.direct_completion.mode = always)."
        )
    raise TurnFailed(
        f"Stopped after {policy.max_iterations} model calls without a final answer "
        f"(runtime_policy.max_iterations = {policy.max_iterations})."
    )


def _delta_sink(on_event: Callable[[str, dict], None] | None, redactor: Redactor) -> DeltaRedactor | None:
    """The answer's text deltas, redacted across delta boundaries, to `on_event` (a
    streamed conversation)."""
    if on_event is None:
        return None
    return DeltaRedactor(redactor, lambda text: _tell(on_event, "delta", {"text": text}))


def _tell(on_event: Callable[[str, dict], None] | None, kind: str, data: object) -> None:
    if on_event is None:
        return
    try:
        on_event(kind, {"calls": data} if isinstance(data, list) else data)
    except Exception:  # a listener's failure must not fail the turn
        logger.exception("A turn's event listener failed")


def _call_error(
    exc: ProviderError, request: ModelRequest, call_timeout: float, direct: DirectCompletionPolicy | None
) -> tuple[str, str]:
    """The call's failure as the turn's error and its kind."""
    if exc.kind == ProviderError.TIMEOUT and request.timeout_seconds < call_timeout:
        # The turn's time, not the preset's, bounded this call.
        return TURN_OUT_OF_TIME, AgentTurn.ErrorKind.DEADLINE
    if exc.kind == ProviderError.TIMEOUT and direct and call_timeout == direct.timeout_ms / 1000:
        return (
            f"The direct completion took longer than runtime_policy.app.direct_completion.timeout_ms "
            f"({direct.timeout_ms} ms).",
            exc.kind,
        )
    return f"Provider error ({exc.kind}): {exc.message}", exc.kind


def _cost(model_info: catalog.ModelInfo | None, usage: Usage) -> Decimal:
    return catalog.cost_usd(
        model_info,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cache_write_input_tokens=usage.cache_write_input_tokens,
    )


def _add_totals(turn: AgentTurn, usage: Usage, cost: Decimal) -> None:
    turn.model_calls += 1
    turn.input_tokens += usage.input_tokens
    turn.output_tokens += usage.output_tokens
    turn.cached_input_tokens += usage.cached_input_tokens
    turn.cost_usd += cost


# --- tools ----------------------------------------------------------------------------
def _run_tools(context: TurnContext, calls: tuple[ToolCall, ...], offered: set[str]) -> list[tuple[Message, dict]]:
    """Run each requested call (delegations first, several in a pool of
    `children.max_per_parent` threads, each child waiting for a place in its tree:
    `agents.runtime.tree`); every outcome, even a refusal, goes back to the model as a
    tool result, never as an exception. A child lends its own place while its children run."""
    delegations = [call for call in calls if call.name == "delegate" and call.name in offered and not context.dry_run]
    outcomes: dict[str, tuple[Message, dict]] = {}
    place = context.branch.place
    with place.lent(context.deadline) if place and delegations else nullcontext():
        if len(delegations) == 1:
            outcomes[delegations[0].id] = _run_tool(context, delegations[0], offered)
        elif delegations:
            workers = max(1, min(context.policy.children.max_per_parent, len(delegations)))
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"turn{context.turn.pk}")
            futures = {c.id: pool.submit(_in_own_connection, _run_tool, context, c, offered) for c in delegations}
            for call in delegations:
                try:
                    outcomes[call.id] = futures[call.id].result(timeout=max(context.deadline - time.monotonic(), 0.001))
                except FutureTimeout:
                    outcomes[call.id] = _tool_result(call, "The delegated agent did not answer in time.", "timeout")
            # Late children finish on their own (bounded by their deadline); the parent goes on.
            pool.shutdown(wait=False, cancel_futures=True)
    return [outcomes.get(call.id) or _run_tool(context, call, offered) for call in calls]


def release_connection() -> None:
    """Give the database connection back to the pool before a model call: the call may
    take minutes, and a connection held meanwhile is one fewer for every other worker
    thread. Only with a pool (a plain connection would cost a reconnect) and never
    inside a transaction."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()


def _in_own_connection(function: object, *args: object) -> object:
    try:
        return function(*args)
    finally:
        connection.close()  # a pool thread's connection must not outlive its task


def _run_tool(context: TurnContext, call: ToolCall, offered: set[str]) -> tuple[Message, dict]:
    if call.name not in offered:
        return _tool_result(call, f"Unknown tool '{call.name}': use only the tools you were given.", "refused")
    tool = REGISTRY[call.name]()
    if call.arguments is None:
        return _tool_result(call, f"Malformed arguments for '{call.name}': send a JSON object.", "refused")
    try:
        arguments = tool.parse(call.arguments)
        if tool.has_side_effects and context.dry_run:
            return _tool_result(call, f"[dry run] '{call.name}' was recorded, not executed.", "dry_run")
        if call.name in context.guarded:
            return _tool_result(call, *hold(context, call, tool, arguments))
        return _tool_result(call, tool.run(context, arguments), "ran")
    except ToolError as exc:
        return _tool_result(call, str(exc), "refused")


def _tool_result(call: ToolCall, text: str, outcome: str) -> tuple[Message, dict]:
    message = Message(
        role="tool", content=text, tool_call_id=call.id, tool_name=call.name, is_error=outcome in ("refused", "timeout")
    )
    record = {"id": call.id, "name": call.name, "arguments": call.raw_arguments, "outcome": outcome, "result": text}
    return message, record


def delegate_to(context: TurnContext, *, agent_key: str, message: str) -> str:
    """Run a child agent in-process within the turn's `runtime_policy.children` and
    `interaction.spawn_agent_ids` (`agents.runtime.tree`); its answer (or why it failed)
    is the tool's result."""
    children, interaction = context.policy.children, context.policy.interaction
    child_depth = context.depth + 1
    if child_depth > context.depth_limit:
        raise ToolError(tree.depth_refusal(depth=context.depth, limit=context.depth_limit))
    if interaction.spawn_agent_ids is not None and agent_key not in interaction.spawn_agent_ids:
        allowed = ", ".join(interaction.spawn_agent_ids) or "none"
        raise ToolError(
            f"Delegation refused: '{agent_key}' is not in runtime_policy.interaction.spawn_agent_ids "
            f"(allowed: {allowed})."
        )
    # all_objects: a sandbox parent delegates to sandbox agents; a real one never does.
    children_of_workspace = (
        turn_agents()
        .filter(workspace_id=context.agent.workspace_id, key=agent_key, is_active=True)
        .filter(is_sandbox__in=[False, context.agent.is_sandbox])
    )
    # Delegations of one response run in parallel: count them under a lock.
    with context.lock:
        if context.delegations >= children.max_per_parent:
            raise ToolError(
                f"Delegation refused: at most {children.max_per_parent} per turn "
                "(runtime_policy.children.max_per_parent)."
            )
        context.delegations += 1
    # Never more than the parent has left.
    deadline = min(context.deadline, time.monotonic() + tree.child_timeout(children))
    root_id, cap = context.turn.root_id or context.turn.pk, tree.tree_cap(context.branch, children)
    branch = tree.Branch(
        root_id=root_id,
        cap=cap,
        denied=tree.child_denied(interaction, inherited=context.branch.denied, leaf=child_depth >= context.depth_limit),
        place=tree.Place(root_id, cap),
    )
    if not branch.place.take(deadline):
        with context.lock:
            context.delegations -= 1  # nothing ran: the slot is not used
        raise ToolError(tree.concurrency_refusal(cap))
    try:
        child_turn = _run_turn(
            agents=children_of_workspace,
            version=None,
            message=message,
            actor=context.actor,
            context=None,
            dry_run=context.dry_run,
            parent=context.turn,
            depth=child_depth,
            depth_limit=context.depth_limit,
            deadline=deadline,
            branch=branch,
        )
    finally:
        branch.place.give_back()
    if child_turn is None:
        with context.lock:
            context.delegations -= 1  # nothing ran: the slot is not used
        raise ToolError(f"Delegation refused: no enabled agent '{agent_key}' in this workspace.")
    if child_turn.status != AgentTurn.Status.SUCCEEDED:
        raise ToolError(f"Agent '{agent_key}' failed: {child_turn.error}")
    return child_turn.answer
