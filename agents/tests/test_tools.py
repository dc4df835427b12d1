"""The tools an agent may call during a turn, driven through the runtime on the echo
provider: self-edit tools propose (never publish) a change, and `delegate` runs a child
agent within `runtime_policy.children` and the global limits.

What a tool returned, or why it was refused, is read back from the DebugLog of the
model call that asked for it (`tool_calls`), and from the next call's messages.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone
from pytest_django.fixtures import Settings

from agents.models import Agent, AgentSection, AgentTurn, DebugLog, Preset, PromptVersion
from agents.runtime import agent_run_test, agent_turn_run
from agents.runtime.tools import QUEUED, REGISTRY, available_tools
from agents.services import agent_create, agent_update, prompt_version_approve, prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import WRITER_PROFILE, echo_sp, make_agent

SELF_EDIT_TOOLS = ["propose_section_edit", "propose_persona_edit", "propose_onboarding_edit"]
SECTION_ARGS = '{"section_key": "method", "body": "Plan, then write.", "reason": "Clearer"}'
PER_PARENT_REFUSAL = "Delegation refused: at most 1 per turn (runtime_policy.children.max_per_parent)."


def delegate_line(agent: str, message: str) -> str:
    return "@call delegate " + json.dumps({"agent": agent, "message": message})


def tool_calls(turn: AgentTurn) -> list[dict]:
    """Every tool call the turn's model asked for, in order, with what became of it.
    (all_objects: `turn.debug_logs` goes through the default manager, which hides a
    sandbox turn's logs.)"""
    return [call for log in DebugLog.all_objects.filter(turn=turn).order_by("sequence") for call in log.tool_calls]


@pytest.fixture
def editor_agent(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    """An agent allowed to propose edits to its own prompt."""
    return make_agent(workspace, "writer", by=ada, allowed_tool_names=SELF_EDIT_TOOLS)


@pytest.fixture
def sandbox_writer(workspace: Workspace, alice: User, echo_preset: Preset) -> Agent:
    """A sandbox agent allowed to propose edits to its own prompt (which apply at once)."""
    return make_agent(workspace, "sb_writer", by=alice, is_sandbox=True, allowed_tool_names=SELF_EDIT_TOOLS)


@pytest.fixture
def sandbox_helper(workspace: Workspace, alice: User, echo_preset: Preset) -> Agent:
    return make_agent(workspace, "sb_helper", by=alice, is_sandbox=True)


@pytest.fixture
def helper(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    return make_agent(workspace, "helper", by=ada, identity={"name": "Helper"}, sections=[])


def make_boss(workspace: Workspace, ada: User, interaction: dict | None = None, **children: object) -> Agent:
    return make_agent(
        workspace,
        "boss",
        by=ada,
        identity={"name": "Boss"},
        allowed_tool_names=["delegate"],
        runtime_policy={"children": {"max_depth": 1, **children}, "interaction": interaction or {}},
    )


def depth_refusal(limit: int) -> str:
    return (
        f"Delegation refused: depth {limit} is this agent's limit, and a child would run at depth {limit + 1} "
        "(runtime_policy.children.max_depth; AIHUMMER_SUBAGENT_MAX_DEPTH where it is null)."
    )


# --- the registry ----------------------------------------------------------------------
def test_only_allowed_and_registered_tools_are_offered() -> None:
    offered = available_tools(["delegate", "set_runtime_policy", "propose_persona_edit"])

    assert [tool.name for tool in offered] == ["delegate", "propose_persona_edit"]
    assert "set_runtime_policy" not in REGISTRY


def test_the_model_is_shown_each_tools_json_schema(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=editor_agent, message="Hi", actor=Actor.for_user(alice))

    offered = turn.debug_logs.get().tools_offered
    assert [tool["name"] for tool in offered] == SELF_EDIT_TOOLS
    section = offered[0]["parameters"]
    assert section["required"] == ["section_key", "body", "reason"]
    assert section["additionalProperties"] is False


# --- self-edit: always a proposal ------------------------------------------------------
def test_a_section_edit_is_proposed_as_pending_in_the_name_of_who_started_the_turn(
    editor_agent: Agent, alice: User
) -> None:
    turn = agent_turn_run(
        agent=editor_agent,
        message=f"Improve yourself.\n@call propose_section_edit {SECTION_ARGS}",
        actor=Actor.for_user(alice),
    )

    version = PromptVersion.objects.get(agent=editor_agent, number=2)
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert version.status == PromptVersion.Status.PENDING
    assert version.source == "agent:writer"
    assert version.proposer_identity == f"user:{alice.pk}"
    assert version.proposed_by == alice
    assert version.reason == "Clearer"
    assert version.base_version == editor_agent.live_version
    assert [(s["key"], s["body"]) for s in version.snapshot["sections"]] == [("method", "Plan, then write.")]


def test_the_model_is_told_its_proposal_waits_for_review(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(
        agent=editor_agent, message=f"@call propose_section_edit {SECTION_ARGS}", actor=Actor.for_user(alice)
    )

    first, second = turn.debug_logs.order_by("sequence")
    queued = QUEUED.format(number=2)
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls == [
        {
            "id": "echo-call-0",
            "name": "propose_section_edit",
            "arguments": SECTION_ARGS,
            "outcome": "ran",
            "result": queued,
        }
    ]
    assert queued.startswith("Your proposal is queued for human review as version 2.")
    assert second.incremental  # it holds what the second call added: the exchange
    assert second.messages == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "echo-call-0", "name": "propose_section_edit", "arguments": SECTION_ARGS}],
        },
        {"role": "tool", "content": queued, "tool_call_id": "echo-call-0", "tool_name": "propose_section_edit"},
    ]
    assert second.tool_calls == []


def test_the_live_agent_changes_only_when_a_reviewer_approves(editor_agent: Agent, alice: User, bob: User) -> None:
    agent_turn_run(
        agent=editor_agent, message=f"@call propose_section_edit {SECTION_ARGS}", actor=Actor.for_user(alice)
    )
    version = PromptVersion.objects.get(agent=editor_agent, number=2)

    editor_agent.refresh_from_db()
    assert editor_agent.live_version.number == 1
    assert AgentSection.objects.get(agent=editor_agent, key="method").body == "Plan first."

    prompt_version_approve(version=version, actor=Actor.for_user(bob))

    editor_agent.refresh_from_db()
    assert editor_agent.live_version == version
    assert AgentSection.objects.get(agent=editor_agent, key="method").body == "Plan, then write."


def test_the_person_who_started_the_turn_cannot_approve_what_their_agent_proposed(
    editor_agent: Agent, ada: User
) -> None:
    agent_turn_run(agent=editor_agent, message=f"@call propose_section_edit {SECTION_ARGS}", actor=Actor.for_user(ada))
    version = PromptVersion.objects.get(agent=editor_agent, number=2)

    with pytest.raises(PermissionDenied) as refused:
        prompt_version_approve(version=version, actor=Actor.for_user(ada))

    assert str(refused.value) == "You proposed this version: another person must decide it (four eyes)."


def test_a_section_edit_with_a_new_key_adds_a_section(editor_agent: Agent, alice: User) -> None:
    args = '{"section_key": "tone", "title": "Tone", "body": "Be kind.", "reason": "Missing"}'

    agent_turn_run(agent=editor_agent, message=f"@call propose_section_edit {args}", actor=Actor.for_user(alice))

    version = PromptVersion.objects.get(agent=editor_agent, number=2)
    assert [(s["key"], s["title"], s["body"], s["position"]) for s in version.snapshot["sections"]] == [
        ("method", "Method", "Plan first.", 0),
        ("tone", "Tone", "Be kind.", 1),
    ]


def test_a_persona_edit_is_proposed_as_pending(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(
        agent=editor_agent,
        message='@call propose_persona_edit {"persona": "Warm and brief.", "reason": "Feedback"}',
        actor=Actor.for_user(alice),
    )

    version = PromptVersion.objects.get(agent=editor_agent, number=2)
    assert tool_calls(turn)[0]["outcome"] == "ran"
    assert tool_calls(turn)[0]["result"] == QUEUED.format(number=2)
    assert (version.status, version.source) == (PromptVersion.Status.PENDING, "agent:writer")
    assert version.snapshot["identity"] == {
        **editor_agent.live_version.snapshot["identity"],
        "persona": "Warm and brief.",
    }
    editor_agent.refresh_from_db()
    assert editor_agent.persona == "Curious and precise."


def test_an_onboarding_edit_is_proposed_as_pending(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(
        agent=editor_agent,
        message='@call propose_onboarding_edit {"onboarding": "Ask for their goal.", "reason": "Focus"}',
        actor=Actor.for_user(alice),
    )

    version = PromptVersion.objects.get(agent=editor_agent, number=2)
    assert tool_calls(turn)[0]["result"] == QUEUED.format(number=2)
    assert (version.status, version.snapshot["onboarding"]) == (PromptVersion.Status.PENDING, "Ask for their goal.")
    editor_agent.refresh_from_db()
    assert editor_agent.onboarding == "Introduce yourself once."


def test_a_proposal_identical_to_live_records_nothing(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(
        agent=editor_agent,
        message='@call propose_persona_edit {"persona": "Curious and precise.", "reason": "Same"}',
        actor=Actor.for_user(alice),
    )

    assert tool_calls(turn)[0]["outcome"] == "ran"
    assert tool_calls(turn)[0]["result"] == "Nothing to propose: this is already what your live instructions say."
    assert PromptVersion.objects.filter(agent=editor_agent).count() == 1


def test_a_proposal_the_snapshot_rules_refuse_goes_back_to_the_model(
    editor_agent: Agent, alice: User, settings: Settings
) -> None:
    settings.AIHUMMER_MAX_TEXT_CHARS = 100
    persona = "p" * 150

    turn = agent_turn_run(
        agent=editor_agent,
        message=f'@call propose_persona_edit {{"persona": "{persona}", "reason": "Longer"}}',
        actor=Actor.for_user(alice),
    )

    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert tool_calls(turn)[0]["outcome"] == "refused"
    assert tool_calls(turn)[0]["result"] == "Proposal refused: $.identity.persona: at most 100 characters (got 150)"
    assert PromptVersion.objects.filter(agent=editor_agent).count() == 1


def test_a_sandbox_agent_is_told_its_edit_applied_at_once(sandbox_writer: Agent, alice: User) -> None:
    agent = sandbox_writer

    turn = agent_turn_run(
        agent=agent,
        message='@call propose_persona_edit {"persona": "Warm.", "reason": "Test"}',
        actor=Actor.for_user(alice),
    )

    agent.refresh_from_db()
    assert agent.live_version.number == 2  # what really happened: it is live
    result = tool_calls(turn)[0]["result"]
    assert "version 2" in result
    assert "queued for human review" not in result


# --- self-edit: refusals ---------------------------------------------------------------
def test_a_tool_not_in_allowed_tool_names_is_refused(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=["propose_persona_edit"])

    turn = agent_turn_run(
        agent=agent, message=f"@call propose_section_edit {SECTION_ARGS}", actor=Actor.for_user(alice)
    )

    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert tool_calls(turn) == [
        {
            "id": "echo-call-0",
            "name": "propose_section_edit",
            "arguments": SECTION_ARGS,
            "outcome": "refused",
            "result": "Unknown tool 'propose_section_edit': use only the tools you were given.",
        }
    ]
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_an_agent_with_no_tools_is_offered_none_and_refused_any(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada)

    turn = agent_turn_run(
        agent=agent, message=f"@call propose_section_edit {SECTION_ARGS}", actor=Actor.for_user(alice)
    )

    assert turn.debug_logs.order_by("sequence").first().tools_offered == []
    assert tool_calls(turn)[0]["outcome"] == "refused"
    assert PromptVersion.objects.filter(agent=agent).count() == 1


def test_an_unknown_tool_is_refused(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(agent=editor_agent, message="@call set_runtime_policy {}", actor=Actor.for_user(alice))

    assert tool_calls(turn) == [
        {
            "id": "echo-call-0",
            "name": "set_runtime_policy",
            "arguments": "{}",
            "outcome": "refused",
            "result": "Unknown tool 'set_runtime_policy': use only the tools you were given.",
        }
    ]


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"'])
def test_malformed_arguments_are_refused(editor_agent: Agent, alice: User, raw: str) -> None:
    turn = agent_turn_run(agent=editor_agent, message=f"@call propose_section_edit {raw}", actor=Actor.for_user(alice))

    call = tool_calls(turn)[0]
    assert (call["arguments"], call["outcome"]) == (raw, "refused")
    assert call["result"] == "Malformed arguments for 'propose_section_edit': send a JSON object."
    assert PromptVersion.objects.filter(agent=editor_agent).count() == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "result"),
    [
        (
            "propose_section_edit",
            {"section_key": "Bad Key", "body": "x", "reason": "r"},
            "Invalid arguments: $.section_key: must match ^[a-z0-9_-]{1,50}$",
        ),
        (
            "propose_section_edit",
            {"section_key": "method", "body": "", "reason": "r", "extra": 1},
            "Invalid arguments: $.body: must have at least 1 character; $.extra: unknown field",
        ),
        ("propose_persona_edit", {"persona": "Warm."}, "Invalid arguments: $.reason: Field required"),
        (
            "propose_onboarding_edit",
            {"onboarding": 3, "reason": "r" * 1001},
            "Invalid arguments: $.onboarding: must be a string; $.reason: must have at most 1000 characters (got 1001)",
        ),
    ],
)
def test_arguments_failing_the_schema_are_refused_with_their_json_path(
    editor_agent: Agent, alice: User, tool: str, arguments: dict, result: str
) -> None:
    turn = agent_turn_run(
        agent=editor_agent, message=f"@call {tool} {json.dumps(arguments)}", actor=Actor.for_user(alice)
    )

    call = tool_calls(turn)[0]
    assert (call["outcome"], call["result"]) == ("refused", result)
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert PromptVersion.objects.filter(agent=editor_agent).count() == 1


def test_a_refusal_goes_back_to_the_model_as_an_error_result(editor_agent: Agent, alice: User) -> None:
    turn = agent_turn_run(
        agent=editor_agent, message="@call propose_section_edit {not json", actor=Actor.for_user(alice)
    )

    second = turn.debug_logs.get(sequence=2)
    assert second.messages[-1] == {
        "role": "tool",
        "content": "Malformed arguments for 'propose_section_edit': send a JSON object.",
        "tool_call_id": "echo-call-0",
        "tool_name": "propose_section_edit",
    }
    assert turn.answer.startswith("[echo echo-1] @call propose_section_edit {not json #sp=")


def test_several_calls_in_one_response_each_get_their_outcome(editor_agent: Agent, alice: User) -> None:
    message = "\n".join(
        [
            f"@call propose_section_edit {SECTION_ARGS}",
            "@call delegate {}",
            '@call propose_persona_edit {"persona": "Warm."}',
        ]
    )

    turn = agent_turn_run(agent=editor_agent, message=message, actor=Actor.for_user(alice))

    assert [(c["id"], c["name"], c["outcome"]) for c in tool_calls(turn)] == [
        ("echo-call-0", "propose_section_edit", "ran"),
        ("echo-call-1", "delegate", "refused"),
        ("echo-call-2", "propose_persona_edit", "refused"),
    ]
    assert turn.model_calls == 2


# --- delegate --------------------------------------------------------------------------
def test_delegating_runs_the_child_and_returns_its_answer(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    child = AgentTurn.objects.get(parent=turn)
    assert turn.status == AgentTurn.Status.SUCCEEDED
    assert (child.agent, child.depth, child.status, child.message) == (helper, 1, AgentTurn.Status.SUCCEEDED, "hi")
    assert (child.actor_source, child.started_by, child.dry_run) == ("admin:alice", alice, False)
    assert child.answer == f"[echo echo-1] hi #sp={echo_sp(helper.live_version)}"
    assert tool_calls(turn)[0]["outcome"] == "ran"
    assert tool_calls(turn)[0]["result"] == child.answer
    assert turn.debug_logs.get(sequence=2).messages[-1]["content"] == child.answer
    # The child's model call is the child's: the parent's totals hold only its own two.
    assert (turn.model_calls, child.model_calls) == (2, 1)


def test_a_child_delegating_beyond_the_depth_limit_is_refused(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    boss = make_boss(workspace, ada)
    make_agent(workspace, "helper", by=ada, allowed_tool_names=["delegate"])
    nested = delegate_line("boss", "deeper")

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", nested), actor=Actor.for_user(alice))

    child = AgentTurn.objects.get(parent=turn)
    assert child.status == AgentTurn.Status.SUCCEEDED
    assert tool_calls(child)[0]["outcome"] == "refused"
    assert tool_calls(child)[0]["result"] == depth_refusal(1)
    assert AgentTurn.objects.count() == 2


def test_the_policys_depth_replaces_a_lower_global_setting(
    workspace: Workspace, ada: User, alice: User, helper: Agent, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_MAX_DEPTH = 0
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["outcome"] == "ran"
    assert AgentTurn.objects.get(parent=turn).status == AgentTurn.Status.SUCCEEDED


def test_a_null_depth_takes_the_global_setting(
    workspace: Workspace, ada: User, alice: User, helper: Agent, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_MAX_DEPTH = 0
    boss = make_boss(workspace, ada, max_depth=None)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["result"] == depth_refusal(0)
    assert AgentTurn.objects.count() == 1


def test_a_chain_of_agents_at_depth_four_runs_past_a_global_of_two(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_MAX_DEPTH = 2
    for n in range(5):
        make_agent(
            workspace,
            f"a{n}",
            by=ada,
            allowed_tool_names=["delegate"],
            runtime_policy={"children": {"max_depth": 4}},
        )
    message = delegate_line("a5", "too deep")  # what a4 is asked to send on
    for n in range(4, 0, -1):
        message = delegate_line(f"a{n}", message)

    root = agent_turn_run(agent=Agent.objects.get(key="a0"), message=message, actor=Actor.for_user(alice))

    turns = list(AgentTurn.objects.order_by("depth"))
    assert [(t.agent_key, t.depth, t.status) for t in turns] == [
        (f"a{n}", n, AgentTurn.Status.SUCCEEDED) for n in range(5)
    ]
    assert root.parent is None
    assert tool_calls(turns[4])[0]["result"] == depth_refusal(4)


def test_a_policy_depth_of_zero_forbids_children(workspace: Workspace, ada: User, alice: User, helper: Agent) -> None:
    boss = make_boss(workspace, ada, max_depth=0)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["outcome"] == "refused"
    assert tool_calls(turn)[0]["result"] == depth_refusal(0)
    assert AgentTurn.objects.count() == 1


@pytest.mark.parametrize(("listed", "shown"), [(["critic"], "critic"), ([], "none")])
def test_a_child_not_in_spawn_agent_ids_is_refused(
    workspace: Workspace, ada: User, alice: User, helper: Agent, listed: list, shown: str
) -> None:
    boss = make_boss(workspace, ada, interaction={"spawn_agent_ids": listed})

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["outcome"] == "refused"
    assert tool_calls(turn)[0]["result"] == (
        f"Delegation refused: 'helper' is not in runtime_policy.interaction.spawn_agent_ids (allowed: {shown})."
    )
    assert AgentTurn.objects.count() == 1


def test_a_child_in_spawn_agent_ids_runs(workspace: Workspace, ada: User, alice: User, helper: Agent) -> None:
    boss = make_boss(workspace, ada, interaction={"spawn_agent_ids": ["critic", "helper"]})

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["outcome"] == "ran"
    assert AgentTurn.objects.get(parent=turn).status == AgentTurn.Status.SUCCEEDED


PERSONA_ARGS = '{"persona": "Terse.", "reason": "Shorter"}'


def offered_names(turn: AgentTurn) -> list[str]:
    return [tool["name"] for tool in DebugLog.all_objects.filter(turn=turn).order_by("sequence")[0].tools_offered]


def test_child_tool_deny_takes_a_tool_from_children_and_grandchildren(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    boss = make_boss(workspace, ada, interaction={"child_tool_deny": ["propose_persona_edit"]}, max_depth=2)
    for key in ("mid", "leaf"):
        make_agent(workspace, key, by=ada, allowed_tool_names=["delegate", "propose_persona_edit"])
    persona = f"@call propose_persona_edit {PERSONA_ARGS}"
    message = delegate_line("mid", f"{persona}\n{delegate_line('leaf', persona)}")

    turn = agent_turn_run(agent=boss, message=message, actor=Actor.for_user(alice))

    mid = AgentTurn.objects.get(parent=turn)
    leaf = AgentTurn.objects.get(parent=mid)
    assert (offered_names(mid), offered_names(leaf)) == (["delegate"], ["delegate"])
    assert tool_calls(mid)[0]["result"] == "Unknown tool 'propose_persona_edit': use only the tools you were given."
    assert tool_calls(leaf)[0]["outcome"] == "refused"
    assert PromptVersion.objects.filter(status=PromptVersion.Status.PENDING).count() == 0


def test_child_leaf_tool_deny_takes_a_tool_only_from_children_that_may_not_delegate(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    make_agent(workspace, "helper", by=ada, allowed_tool_names=["delegate", "propose_persona_edit"])
    message = delegate_line("helper", f"@call propose_persona_edit {PERSONA_ARGS}")
    interaction = {"child_leaf_tool_deny": ["propose_persona_edit"]}

    shallow = make_boss(workspace, ada, interaction=interaction, max_depth=1)
    deep = make_agent(
        workspace,
        "deep",
        by=ada,
        allowed_tool_names=["delegate"],
        runtime_policy={"children": {"max_depth": 2}, "interaction": interaction},
    )

    leaf = AgentTurn.objects.get(parent=agent_turn_run(agent=shallow, message=message, actor=Actor.for_user(alice)))
    inner = AgentTurn.objects.get(parent=agent_turn_run(agent=deep, message=message, actor=Actor.for_user(alice)))

    assert offered_names(leaf) == ["delegate"]
    assert tool_calls(leaf)[0]["outcome"] == "refused"
    assert offered_names(inner) == ["delegate", "propose_persona_edit"]
    assert tool_calls(inner)[0]["outcome"] == "ran"
    assert PromptVersion.objects.filter(status=PromptVersion.Status.PENDING).count() == 1


def test_a_disabled_child_is_refused(workspace: Workspace, ada: User, alice: User, helper: Agent) -> None:
    agent_update(agent=helper, actor=Actor.for_user(ada), is_active=False)
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["result"] == "Delegation refused: no enabled agent 'helper' in this workspace."
    assert AgentTurn.objects.count() == 1


def test_an_unknown_child_is_refused(workspace: Workspace, ada: User, alice: User, echo_preset: Preset) -> None:
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("ghost", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["result"] == "Delegation refused: no enabled agent 'ghost' in this workspace."


def test_a_child_of_another_workspace_is_refused_like_a_missing_one(
    workspace: Workspace, other_workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    root_actor = Actor.for_operator(name="ops")
    agent_create(workspace=other_workspace, actor=root_actor, key="helper", name="Theirs", snapshot=WRITER_PROFILE)
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["result"] == "Delegation refused: no enabled agent 'helper' in this workspace."
    assert AgentTurn.all_objects.count() == 1


def test_a_real_agent_cannot_delegate_to_a_sandbox_agent(
    workspace: Workspace, ada: User, alice: User, sandbox_helper: Agent
) -> None:
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(agent=boss, message=delegate_line("sb_helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["result"] == "Delegation refused: no enabled agent 'sb_helper' in this workspace."
    assert AgentTurn.all_objects.count() == 1


def test_a_sandbox_agent_delegates_to_a_sandbox_agent(workspace: Workspace, alice: User, sandbox_helper: Agent) -> None:
    actor = Actor.for_user(alice)
    boss = make_agent(workspace, "sb_boss", by=alice, is_sandbox=True, allowed_tool_names=["delegate"])

    turn = agent_turn_run(agent=boss, message=delegate_line("sb_helper", "hi"), actor=actor)

    child = AgentTurn.all_objects.get(parent=turn)
    assert (child.agent_key, child.is_sandbox, child.status) == ("sb_helper", True, AgentTurn.Status.SUCCEEDED)
    assert AgentTurn.objects.count() == 0  # both turns are sandbox rows


def test_a_failing_child_is_reported_to_the_parent(workspace: Workspace, ada: User, alice: User, helper: Agent) -> None:
    boss = make_boss(workspace, ada)

    turn = agent_turn_run(
        agent=boss, message=delegate_line("helper", "hi\n@error unavailable"), actor=Actor.for_user(alice)
    )

    child = AgentTurn.objects.get(parent=turn)
    assert child.status == AgentTurn.Status.FAILED
    assert tool_calls(turn)[0]["outcome"] == "refused"
    assert tool_calls(turn)[0]["result"] == (
        "Agent 'helper' failed: Provider error (unavailable): echo was scripted to fail with unavailable"
    )
    assert turn.status == AgentTurn.Status.SUCCEEDED


def test_a_try_it_turn_records_a_delegation_without_running_it(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    boss = make_boss(workspace, ada)

    turn = agent_run_test(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))

    assert tool_calls(turn)[0]["outcome"] == "dry_run"
    assert tool_calls(turn)[0]["result"] == "[dry run] 'delegate' was recorded, not executed."
    assert AgentTurn.objects.count() == 1


# --- delegate: several at once (child turns run in a thread pool, so rows must commit) --
@pytest.mark.django_db(transaction=True)
def test_two_delegations_in_one_response_both_run(workspace: Workspace, ada: User, alice: User, helper: Agent) -> None:
    boss = make_boss(workspace, ada, max_concurrent=2)
    message = delegate_line("helper", "first") + "\n" + delegate_line("helper", "second")

    turn = agent_turn_run(agent=boss, message=message, actor=Actor.for_user(alice))

    children = {child.message: child for child in AgentTurn.objects.filter(parent=turn)}
    assert sorted(children) == ["first", "second"]
    assert {child.status for child in children.values()} == {AgentTurn.Status.SUCCEEDED}
    assert {child.depth for child in children.values()} == {1}
    assert [(c["id"], c["outcome"], c["result"]) for c in tool_calls(turn)] == [
        ("echo-call-0", "ran", children["first"].answer),
        ("echo-call-1", "ran", children["second"].answer),
    ]
    assert DebugLog.objects.filter(turn__in=children.values()).count() == 2
    assert turn.status == AgentTurn.Status.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_delegations_beyond_max_per_parent_are_refused(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    # One worker: the two calls run one after the other, in order.
    boss = make_boss(workspace, ada, max_per_parent=1, max_concurrent=1)
    message = delegate_line("helper", "first") + "\n" + delegate_line("helper", "second")

    turn = agent_turn_run(agent=boss, message=message, actor=Actor.for_user(alice))

    assert [(c["outcome"], c["result"]) for c in tool_calls(turn)] == [
        ("ran", AgentTurn.objects.get(parent=turn).answer),
        ("refused", PER_PARENT_REFUSAL),
    ]
    assert AgentTurn.objects.filter(parent=turn).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_delegations_still_respect_max_per_parent(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    # Both delegations run in the pool at once; the count is taken under a lock, so
    # however the threads interleave exactly one child runs.
    boss = make_boss(workspace, ada, max_per_parent=1, max_concurrent=2)
    message = delegate_line("helper", "first") + "\n" + delegate_line("helper", "second")

    turn = agent_turn_run(agent=boss, message=message, actor=Actor.for_user(alice))

    assert AgentTurn.objects.filter(parent=turn).count() == 1
    assert sorted(c["outcome"] for c in tool_calls(turn)) == ["ran", "refused"]


def test_two_section_edits_of_a_sandbox_agent_in_one_turn_both_stay(sandbox_writer: Agent, alice: User) -> None:
    agent = sandbox_writer
    tone = '{"section_key": "tone", "title": "Tone", "body": "Be kind.", "reason": "Missing"}'
    message = f"@call propose_section_edit {SECTION_ARGS}\n@call propose_section_edit {tone}"

    agent_turn_run(agent=agent, message=message, actor=Actor.for_user(alice))

    agent.refresh_from_db()
    assert agent.live_version.number == 3
    assert [(s["key"], s["body"]) for s in agent.live_version.snapshot["sections"]] == [
        ("method", "Plan, then write."),
        ("tone", "Be kind."),
    ]


# --- children.archive_after_minutes ----------------------------------------------------
def finished_minutes_ago(turn: AgentTurn, minutes: int) -> None:
    AgentTurn.objects.filter(pk=turn.pk).update(finished_at=timezone.now() - timedelta(minutes=minutes))


def test_finished_children_leave_the_default_list_after_the_parents_archive_delay(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    boss = make_boss(workspace, ada, archive_after_minutes=30)
    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))
    child = AgentTurn.objects.get(parent=turn)

    finished_minutes_ago(child, 29)
    listed_before = set(AgentTurn.objects.listed())
    finished_minutes_ago(child, 31)
    listed_after = set(AgentTurn.objects.listed())
    prompt_version_propose(
        agent=boss,
        changes={"runtime_policy": {"children": {"max_depth": 1, "archive_after_minutes": 60}}},
        actor=Actor.for_user(ada),
        mode="live",
    )

    assert listed_before == {turn, child}
    assert listed_after == {turn}
    assert set(AgentTurn.objects.all()) == {turn, child}  # kept, only not listed
    assert set(AgentTurn.objects.listed()) == {turn, child}  # the new policy applies at once


def test_top_level_and_running_turns_are_always_listed(
    workspace: Workspace, ada: User, alice: User, helper: Agent
) -> None:
    boss = make_boss(workspace, ada, archive_after_minutes=0)
    turn = agent_turn_run(agent=boss, message=delegate_line("helper", "hi"), actor=Actor.for_user(alice))
    child = AgentTurn.objects.get(parent=turn)
    finished_minutes_ago(turn, 10_000)
    AgentTurn.objects.filter(pk=child.pk).update(finished_at=None, status=AgentTurn.Status.RUNNING)

    assert set(AgentTurn.objects.listed()) == {turn, child}
