"""Conversations: a message in, the agent's answer out, in the conversation that the
agent's `runtime_policy.session` picks, with that conversation's history sent before it
under `runtime_policy.context`.

- **Which conversation**: one per agent, verified peer and channel (`per-channel-peer`),
  or per agent and verified peer on every channel (`per-peer`, stored with a blank
  channel). The verified peer is the caller: a person (`user:<id>`), a key's owner
  (`user:<id>`, so a person's key and their session share a `per-peer` conversation)
  or an owner-less key (`api_key:<id>`). A key with the `vouch` scope (a gateway that
  verified its own users) may name the peer instead: `api_key:<its id>/<the id it
  gives>`, in that key's own namespace (a Telegram gateway's user 42 is not a Slack
  gateway's), so no vouched id can pass for a person, another key or another gateway's
  user. Anyone else naming a peer other than their own is refused (`PEER_REFUSED`).
  An agent whose `runtime_policy.interaction.user_ids` is a list talks only to the
  peers it names: anyone else's message is refused before anything is written. Once a
  conversation was handed off, the list is the inherited policy's, which its answers
  run under.
- **Which history**: the messages of the current context (after the last idle reset:
  `session.idle_reset_minutes` of silence opens a new one, the older messages stay
  stored), the newest `context.max_history_messages` of them, read newest first with a
  LIMIT so the read does not grow with the stored history, then cut to
  `context.history_share` of the budget less `reserve_tokens`. Tokens are counted
  approximately, as everywhere in the runtime: characters / 4
  (`agents.runtime.context.estimate_tokens`) plus a message's framing. The loop's own
  `prepare_messages` applies the same budget again to every request of the turn.
- **One transaction**: the turn, its last debug log, the user's message, the answer
  (when the turn succeeded) and the conversation's counters are committed together
  (`agent_turn_complete(then=...)`); nothing is written before the model answered, so a
  refused message leaves no empty conversation behind.
- **A turn that waits for a person** (a guarded tool call): the user's message is
  recorded with the waiting turn, no answer; the turn resumes after the decision with
  the same history (kept with its approval request) and its answer is appended then
  (`conversation_turn_resumed`).

With an explicit context (`context.max_tokens` set), the history is instead read after
the last compacted message and older messages are compacted into a summary, with memory
notes before it (`agents.runtime.compaction`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from agents import catalog
from agents.models import Agent, AgentTurn, Conversation, ConversationMessage
from agents.policy import parse_runtime_policy
from agents.policy_models import RuntimePolicy
from agents.runtime.compaction import compact_and_window, compaction_plan
from agents.runtime.context import MESSAGE_OVERHEAD_TOKENS, NO_HISTORY, History, estimate_tokens, history_budget
from agents.runtime.loop import agent_turn_complete, agent_turn_prepare
from agents.runtime.providers.base import Message
from agents.runtime.tools import Handoff, handoff_target
from aihummer.actors import Actor, Verb
from aihummer.jsonsafe import require_text
from aihummer.models import ApiKey

CHANNEL_PATTERN = re.compile(r"^[a-z0-9_-]{1,50}$")
MAX_MESSAGE_CHARS = 20_000
PEER_REFUSED = (
    "Only an API key with the 'vouch' scope may name another peer: leave 'peer' out, and the "
    "conversation's peer is the caller (a person, a key's owner, or an owner-less key)."
)
VOUCHED_PEER_PATTERN = re.compile(r"^[A-Za-z0-9_.:@+-]{1,60}$")


@dataclass(frozen=True)
class ConversationReply:
    """What `conversation_send` answers: the conversation, the user's message as
    stored, the agent's answer (None when the turn failed: `turn.error` says why)."""

    conversation: Conversation
    message: ConversationMessage
    answer: ConversationMessage | None
    turn: AgentTurn


def conversation_peer(actor: Actor) -> str:
    """The verified peer of `actor`: `user:<id>` or `api_key:<id>` (see the module)."""
    kind, value = actor.identity
    return f"{kind}:{value}"


def conversation_check(*, agent: Agent, actor: Actor, message: str, channel: str, peer: str | None = None) -> str:
    """What `conversation_send` refuses before anything runs (a stream checks it before
    it starts) but the actor's right to run the agent, which the turn checks; returns
    the message as it will be sent."""
    return _addressed(agent=agent, actor=actor, message=message, channel=channel, peer=peer).message


@dataclass(frozen=True)
class _Addressed:
    """A message checked, and where it lands: its conversation (None: a new one) and the
    policy the answer runs under (the inherited one once the conversation was handed off)."""

    message: str
    verified: str
    channel_key: str
    conversation: Conversation | None
    policy: RuntimePolicy


def _addressed(*, agent: Agent, actor: Actor, message: str, channel: str, peer: str | None) -> _Addressed:
    message = require_text(message, field="message", max_chars=MAX_MESSAGE_CHARS)
    if not isinstance(channel, str) or not CHANNEL_PATTERN.match(channel):
        raise ValidationError({"channel": "Give a channel: 1 to 50 characters among a-z, 0-9, _ and -."})
    verified = conversation_verified_peer(actor, peer)
    policy = parse_runtime_policy(agent.runtime_policy)
    channel_key = "" if policy.session.scope == "per-peer" else channel
    conversation = (
        # all_objects: a sandbox agent's conversations are sandbox rows; the agent was resolved for this actor.
        Conversation.all_objects.filter(agent=agent, peer=verified, channel=channel_key)
        .select_related("answering_agent")
        .order_by()
        .first()
    )
    handed = conversation is not None and conversation.answering_agent_id is not None
    if handed:  # the answer runs under the inherited policy: its user_ids decide
        policy = parse_runtime_policy(conversation.inherited_policy)
    listed = policy.interaction.user_ids
    if listed is not None and verified not in listed:
        if handed:
            raise PermissionDenied(
                f"'{verified}' may not talk to agent '{agent.key}': this conversation was handed to "
                f"'{conversation.answering_agent.key}', and the runtime policy it answers under (inherited at the "
                "hand-off) does not list this peer in interaction.user_ids."
            )
        raise PermissionDenied(
            f"'{verified}' may not talk to agent '{agent.key}': its runtime_policy.interaction.user_ids does not "
            "list this peer."
        )
    return _Addressed(message, verified, channel_key, conversation, policy)


def conversation_verified_peer(actor: Actor, peer: str | None) -> str:
    """The peer a message of `actor` naming `peer` (or none) is from (see the module)."""
    own = conversation_peer(actor)
    if peer is None or peer == own:
        return own
    key = actor.api_key if actor.kind == Actor.API_KEY else None
    if key is None or ApiKey.Scope.VOUCH not in key.scope_set:
        raise PermissionDenied(PEER_REFUSED)
    if not isinstance(peer, str) or not VOUCHED_PEER_PATTERN.match(peer):
        raise ValidationError({"peer": "Give the peer's id: 1 to 60 characters among A-Z, a-z, 0-9 and _ . : @ + -."})
    return f"api_key:{key.pk}/{peer}"


def conversation_send(
    *,
    agent: Agent,
    actor: Actor,
    message: str,
    channel: str,
    peer: str | None = None,
    on_event: Callable[[str, dict], None] | None = None,
) -> ConversationReply:
    """Send `message` to `agent` in the conversation `runtime_policy.session.scope`
    picks for the caller on `channel`, run the agent's turn with that conversation's
    history, and record the message, the answer and the turn in one transaction.
    `on_event` is told of the turn as it runs (`agents.runtime.streams`).

    Raises ValidationError (channel, message), PermissionDenied (the actor may not run
    the agent, names a peer it may not vouch for, or the agent's
    `interaction.user_ids` does not list the peer) before anything is written."""
    addressed = _addressed(agent=agent, actor=actor, message=message, channel=channel, peer=peer)
    message, verified, channel_key = addressed.message, addressed.verified, addressed.channel_key
    conversation, policy = addressed.conversation, addressed.policy
    speaker = agent
    if conversation is not None and conversation.answering_agent_id is not None:  # handed off
        speaker = Agent.all_objects.select_related("workspace", "preset").get(pk=conversation.answering_agent_id)
    reset = conversation is not None and _idle(conversation, policy)
    plan = None
    if conversation is None or reset:
        history = NO_HISTORY
    elif policy.context.max_tokens is None:
        history = conversation_window(conversation, policy, speaker)
    else:  # an explicit context: compaction (agents.runtime.compaction)
        plan = compaction_plan(conversation, policy)
        history = History(messages=tuple(Message(role=row.role, content=row.text) for row in plan.rows[-1:]))
    prepared = agent_turn_prepare(agent=speaker, message=message, actor=actor, history=history)
    if speaker is not agent and prepared.setup.policy is not None:
        prepared.setup.policy = policy  # the inherited policy, not the answering agent's own
    prepared.on_event = on_event
    prepared.handoff = Handoff(conversation_id=conversation.pk if conversation is not None else None)
    if plan is not None and prepared.setup.provider is not None and (plan.rows or plan.summary):
        prepared.history = compact_and_window(conversation, prepared, plan)
    recorded: dict[str, object] = {}

    def record(turn: AgentTurn) -> None:
        recorded.update(_record(turn, agent, verified, channel_key, channel, conversation, reset))
        if prepared.handoff.target is not None and turn.status == AgentTurn.Status.SUCCEEDED:
            _hand_to(recorded["conversation"], prepared.handoff.target, prepared.setup.policy.model_dump(mode="json"))

    turn = agent_turn_complete(prepared, then=record)
    return ConversationReply(turn=turn, **recorded)


def conversation_turn_resumed(turn: AgentTurn) -> ConversationMessage | None:
    """In a resumed turn's last transaction (its call was decided by a person): when
    the turn was a conversation's and it answered, the answer is appended to that
    conversation, after whatever was said meanwhile, as `_record` numbers messages
    (the conversation's row locked first). None for a turn of no conversation, or
    one that did not answer (its user message stays, as a failed turn's does)."""
    if turn.status != AgentTurn.Status.SUCCEEDED:
        return None
    asked = (
        ConversationMessage.all_objects.filter(turn=turn, role=ConversationMessage.Role.USER)
        .only("conversation_id", "channel")
        .first()
    )
    if asked is None:
        return None
    conversation = Conversation.all_objects.select_for_update().get(pk=asked.conversation_id)
    answer = _answer(turn, conversation, sequence=conversation.message_count + 1, channel=asked.channel)
    answer.save(force_insert=True)  # as create() does: one INSERT
    conversation.message_count += 1
    conversation.last_message_at = turn.finished_at
    conversation.save(update_fields=["message_count", "last_message_at", "updated_at"])
    return answer


def _answer(turn: AgentTurn, conversation: Conversation, *, sequence: int, channel: str) -> ConversationMessage:
    """The (unsaved) message of `turn`'s answer in `conversation`, numbered `sequence`:
    the version and agent that answered, at the time the turn finished."""
    return ConversationMessage(
        conversation=conversation,
        sequence=sequence,
        role=ConversationMessage.Role.ASSISTANT,
        channel=channel,
        text=turn.answer,
        turn=turn,
        version_number=turn.version_number,
        agent_key=turn.agent_key,
        created_at=turn.finished_at,
        is_sandbox=conversation.is_sandbox,
    )


def conversation_window(conversation: Conversation, policy: RuntimePolicy, agent: Agent) -> History:
    """The history a turn of `conversation` carries (see the module): one query of at
    most `context.max_history_messages` rows, oldest first, within `history_share` of
    the budget, starting with a user message."""
    rows = list(
        ConversationMessage.all_objects.filter(conversation=conversation, sequence__gte=conversation.context_start)
        .order_by("-sequence")
        .values_list("role", "text", "created_at")[: policy.context.max_history_messages]
    )
    preset = agent.preset if agent.preset_id else None
    model_info = catalog.get_model(preset.provider_name, preset.model) if preset else None
    budget, used, kept = history_budget(policy, model_info), 0, []
    for role, text, written in rows:  # newest first: the oldest leave first
        used += estimate_tokens(text) + MESSAGE_OVERHEAD_TOKENS
        if used > budget:
            break
        kept.append((role, text, written))
    kept.reverse()
    while kept and kept[0][0] != ConversationMessage.Role.USER:
        kept.pop(0)  # never start with an answer whose question left the window
    return History(
        messages=tuple(Message(role=role, content=text) for role, text, _ in kept),
        written_at=tuple(written.timestamp() for _, _, written in kept),
    )


def _idle(conversation: Conversation, policy: RuntimePolicy) -> bool:
    minutes = policy.session.idle_reset_minutes
    last = conversation.last_message_at
    return minutes is not None and last is not None and timezone.now() - last >= timedelta(minutes=minutes)


def _record(
    turn: AgentTurn,
    agent: Agent,
    peer: str,
    channel_key: str,
    channel: str,
    found: Conversation | None,
    reset: bool,
) -> dict[str, object]:
    """Inside the turn's transaction: the conversation locked (created on its first
    message), then its messages numbered after the lock, so two messages sent at once
    get distinct, ordered numbers."""
    if found is None:
        found, _ = Conversation.all_objects.get_or_create(
            agent=agent,
            peer=peer,
            channel=channel_key,
            defaults={"workspace_id": agent.workspace_id, "is_sandbox": agent.is_sandbox},
        )
    conversation = Conversation.all_objects.select_for_update().get(pk=found.pk)
    first = conversation.message_count + 1
    user = ConversationMessage(
        conversation=conversation,
        sequence=first,
        role=ConversationMessage.Role.USER,
        channel=channel,
        text=turn.message,
        turn=turn,
        created_at=turn.started_at,
        is_sandbox=conversation.is_sandbox,
    )
    answer = None
    if turn.status == AgentTurn.Status.SUCCEEDED:
        answer = _answer(turn, conversation, sequence=first + 1, channel=channel)
    rows = [user] if answer is None else [user, answer]
    ConversationMessage.all_objects.bulk_create(rows)
    conversation.message_count += len(rows)
    conversation.last_message_at = turn.finished_at or timezone.now()  # a waiting turn has not finished
    if reset:  # what the model was sent had no history: the new context starts here
        conversation.context_start = first
    conversation.save(update_fields=["message_count", "last_message_at", "context_start", "updated_at"])
    return {"conversation": conversation, "message": user, "answer": answer}


# --- hand-off ---------------------------------------------------------------------------
def conversation_handoff(*, conversation: Conversation, agent_key: str, actor: Actor) -> Conversation:
    """Hand `conversation` to the agent `agent_key` (a client's hand-off; an agent's
    own is the `handoff` tool): it answers the next messages under the runtime policy
    of the agent answering now (inherited, as the product document says: that agent's
    live policy, or the one it inherited itself). Raises PermissionDenied (the actor
    may not run agents here), ValidationError({"agent"}); nothing is written then."""
    actor.require(Verb.SANDBOX if conversation.is_sandbox else Verb.RUN, conversation.workspace)
    with transaction.atomic():
        locked = Conversation.all_objects.select_for_update().select_related("agent").get(pk=conversation.pk)
        answering = locked.answering_agent or locked.agent
        inherited = locked.inherited_policy
        if inherited is None:
            inherited = parse_runtime_policy(answering.runtime_policy).model_dump(mode="json")
        allowed = parse_runtime_policy(inherited).interaction.spawn_agent_ids
        target = handoff_target(agent=locked.agent, key=agent_key, allowed=allowed)
        if target.pk == answering.pk:
            raise ValidationError({"agent": f"Agent '{agent_key}' answers this conversation already."})
        _hand_to(locked, target, inherited)
    return locked


def _hand_to(conversation: Conversation, target: Agent, inherited: dict) -> None:
    """Inside a transaction holding the conversation's row: `target` answers from now on, under `inherited`."""
    conversation.answering_agent, conversation.inherited_policy = target, inherited
    conversation.save(update_fields=["answering_agent", "inherited_policy", "updated_at"])
