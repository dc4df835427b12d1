import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from agents.policy import (
    RuntimePolicy,
    default_runtime_policy,
    parse_runtime_policy,
    resolve_runtime_policy,
    runtime_policy_json_schema,
    validate_runtime_policy,
)

# Room in the budget so every context bound can be tried alone, without tripping
# the reserve_tokens < max_tokens rule.
ROOMY_CONTEXT = {"context": {"max_tokens": 1_000_000, "reserve_tokens": 500}}


def refusal(data: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        validate_runtime_policy(data)
    return caught.value.message_dict["runtime_policy"]


def policy_with(path: str, value: object, base: dict | None = None) -> dict:
    """`{"a": {"b": value}}` for "a.b", merged into a copy of `base`."""
    policy = json.loads(json.dumps(base or {}))
    *blocks, name = path.split(".")
    node = policy
    for block in blocks:
        node = node.setdefault(block, {})
    node[name] = value
    return policy


def value_at(policy: dict, path: str) -> object:
    for part in path.split("."):
        policy = policy[part]
    return policy


def test_an_empty_policy_is_the_documented_defaults():
    policy = validate_runtime_policy({})

    assert set(policy) == {
        "version",
        "context",
        "pruning",
        "memory_flush",
        "session",
        "children",
        "max_iterations",
        "app",
        "interaction",
    }
    assert policy["version"] == 1
    assert policy["context"] == {
        "max_tokens": 128_000,
        "reserve_tokens": 4_096,
        "history_share": 0.5,
        "bootstrap_max_chars": 20_000,
    }
    assert policy["pruning"]["placeholder"] == "[older tool result trimmed]"
    assert policy["memory_flush"]["enabled"] is False
    assert policy["session"] == {"idle_minutes": 60, "max_turns": 50}
    assert policy["children"] == {
        "max_depth": 1,
        "max_concurrent": 2,
        "max_per_parent": 3,
        "timeout_seconds": 600,
        "allowed_agents": [],
    }
    assert policy["max_iterations"] == 16
    assert policy["app"] == {
        "reasoning_effort": None,
        "service_tier": None,
        "direct_completion": {"enabled": False, "max_tokens": 1_024, "timeout_ms": 15_000},
    }
    assert policy["interaction"] == {"allowed_channels": [], "allowed_users": [], "reply_mode": "direct"}


def test_the_default_policy_is_a_fresh_copy_each_time():
    first = default_runtime_policy()
    first["children"]["allowed_agents"].append("writer")

    assert default_runtime_policy() == validate_runtime_policy({})
    assert default_runtime_policy()["children"]["allowed_agents"] == []


@pytest.mark.parametrize(
    ("path", "edge", "past", "message"),
    [
        ("context.max_tokens", 1_000, 999, "must be at least 1000 (got 999)"),
        ("context.max_tokens", 2_000_000, 2_000_001, "must be at most 2000000 (got 2000001)"),
        ("context.reserve_tokens", 0, -1, "must be at least 0 (got -1)"),
        ("context.reserve_tokens", 200_000, 200_001, "must be at most 200000 (got 200001)"),
        ("context.history_share", 0.05, 0.04, "must be at least 0.05 (got 0.04)"),
        ("context.history_share", 0.95, 0.96, "must be at most 0.95 (got 0.96)"),
        ("context.bootstrap_max_chars", 500, 499, "must be at least 500 (got 499)"),
        ("context.bootstrap_max_chars", 200_000, 200_001, "must be at most 200000 (got 200001)"),
        ("pruning.keep_last_tool_results", 0, -1, "must be at least 0 (got -1)"),
        ("pruning.keep_last_tool_results", 100, 101, "must be at most 100 (got 101)"),
        ("pruning.max_tool_result_chars", 100, 99, "must be at least 100 (got 99)"),
        ("pruning.max_tool_result_chars", 100_000, 100_001, "must be at most 100000 (got 100001)"),
        ("memory_flush.threshold_share", 0.1, 0.09, "must be at least 0.1 (got 0.09)"),
        ("memory_flush.threshold_share", 1.0, 1.01, "must be at most 1.0 (got 1.01)"),
        ("session.idle_minutes", 1, 0, "must be at least 1 (got 0)"),
        ("session.idle_minutes", 10_080, 10_081, "must be at most 10080 (got 10081)"),
        ("session.max_turns", 1, 0, "must be at least 1 (got 0)"),
        ("session.max_turns", 1_000, 1_001, "must be at most 1000 (got 1001)"),
        ("children.max_depth", 0, -1, "must be at least 0 (got -1)"),
        ("children.max_depth", 4, 5, "must be at most 4 (got 5)"),
        ("children.max_concurrent", 1, 0, "must be at least 1 (got 0)"),
        ("children.max_concurrent", 8, 9, "must be at most 8 (got 9)"),
        ("children.max_per_parent", 0, -1, "must be at least 0 (got -1)"),
        ("children.max_per_parent", 5, 6, "must be at most 5 (got 6)"),
        ("children.timeout_seconds", 1, 0, "must be at least 1 (got 0)"),
        ("children.timeout_seconds", 172_800, 172_801, "must be at most 172800 (got 172801)"),
        ("max_iterations", 1, 0, "must be at least 1 (got 0)"),
        ("max_iterations", 256, 257, "must be at most 256 (got 257)"),
        ("app.direct_completion.max_tokens", 1, 0, "must be at least 1 (got 0)"),
        ("app.direct_completion.max_tokens", 4_096, 4_097, "must be at most 4096 (got 4097)"),
        ("app.direct_completion.timeout_ms", 100, 99, "must be at least 100 (got 99)"),
        ("app.direct_completion.timeout_ms", 60_000, 60_001, "must be at most 60000 (got 60001)"),
    ],
)
def test_each_bound_is_accepted_at_its_edge_and_refused_just_past_it(path, edge, past, message):
    accepted = validate_runtime_policy(policy_with(path, edge, ROOMY_CONTEXT))
    problems = refusal(policy_with(path, past, ROOMY_CONTEXT))

    assert value_at(accepted, path) == edge
    assert problems == [f"$.{path}: {message}"]


@pytest.mark.parametrize(
    ("path", "edge", "past", "message"),
    [
        ("pruning.placeholder", "x" * 200, "x" * 201, "must have at most 200 characters (got 201)"),
        ("memory_flush.prompt", "x" * 2_000, "x" * 2_001, "must have at most 2000 characters (got 2001)"),
        (
            "children.allowed_agents",
            [f"agent-{n}" for n in range(50)],
            [f"agent-{n}" for n in range(51)],
            "must have at most 50 items (got 51)",
        ),
        ("interaction.allowed_channels", ["c"] * 50, ["c"] * 51, "must have at most 50 items (got 51)"),
        ("interaction.allowed_users", ["u"] * 50, ["u"] * 51, "must have at most 50 items (got 51)"),
    ],
)
def test_each_length_is_accepted_at_its_edge_and_refused_just_past_it(path, edge, past, message):
    accepted = validate_runtime_policy(policy_with(path, edge))
    problems = refusal(policy_with(path, past))

    assert value_at(accepted, path) == edge
    assert problems == [f"$.{path}: {message}"]


@pytest.mark.parametrize("block", ["allowed_channels", "allowed_users"])
def test_interaction_names_must_be_1_to_100_characters(block):
    accepted = validate_runtime_policy({"interaction": {block: ["x" * 100]}})
    problems = refusal({"interaction": {block: ["ok", "", "x" * 101]}})

    assert accepted["interaction"][block] == ["x" * 100]
    assert problems == [
        f"$.interaction.{block}[1]: must have at least 1 character",
        f"$.interaction.{block}[2]: must have at most 100 characters (got 101)",
    ]


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"max_iteration": 3}, "$.max_iteration"),
        ({"children": {"foo": 1}}, "$.children.foo"),
        ({"app": {"direct_completion": {"stream": True}}}, "$.app.direct_completion.stream"),
        ({"allowed agents": []}, "$['allowed agents']"),
    ],
)
def test_an_unknown_field_is_refused_with_its_path(policy, path):
    assert refusal(policy) == [f"{path}: unknown field"]


def test_every_problem_is_reported_at_once():
    problems = refusal(
        {
            "children": {"max_depth": 9, "foo": 1},
            "max_iterations": "3",
            "interaction": {"allowed_users": ["*"]},
            "colour": "blue",
        }
    )

    assert problems == [
        "$.children.max_depth: must be at most 4 (got 9)",
        "$.children.foo: unknown field",
        "$.max_iterations: must be an integer",
        "$.interaction.allowed_users[0]: wildcards are not allowed",
        "$.colour: unknown field",
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"max_iterations": "3"}, "$.max_iterations: must be an integer"),
        ({"max_iterations": 3.0}, "$.max_iterations: must be an integer"),
        ({"max_iterations": True}, "$.max_iterations: must be an integer"),
        ({"pruning": {"enabled": 1}}, "$.pruning.enabled: must be a boolean"),
        ({"pruning": {"enabled": "true"}}, "$.pruning.enabled: must be a boolean"),
        ({"pruning": {"placeholder": 5}}, "$.pruning.placeholder: must be a string"),
        ({"context": {"history_share": "0.5"}}, "$.context.history_share: must be a number"),
        ({"context": {"history_share": True}}, "$.context.history_share: must be a number"),
        ({"children": "none"}, "$.children: must be a JSON object"),
        ({"children": {"allowed_agents": "writer"}}, "$.children.allowed_agents: must be a JSON array"),
        ({"children": {"allowed_agents": [7]}}, "$.children.allowed_agents[0]: must be a string"),
        ({"version": 2}, "$.version: must be 1"),
        ({"version": True}, "$.version: must be 1"),
        ({"interaction": {"reply_mode": "dm"}}, "$.interaction.reply_mode: must be one of: direct, thread"),
        (
            {"app": {"reasoning_effort": "max"}},
            "$.app.reasoning_effort: must be one of: minimal, low, medium, high, null",
        ),
        (
            {"app": {"service_tier": "cheap"}},
            "$.app.service_tier: must be one of: auto, default, flex, priority, null",
        ),
    ],
)
def test_a_wrong_type_is_refused_by_name(policy, message):
    assert refusal(policy) == [message]


def test_an_integer_is_accepted_where_a_number_is_expected():
    policy = validate_runtime_policy({"memory_flush": {"threshold_share": 1}})

    assert policy["memory_flush"]["threshold_share"] == 1.0
    assert isinstance(policy["memory_flush"]["threshold_share"], float)


@pytest.mark.parametrize("block", ["allowed_channels", "allowed_users"])
@pytest.mark.parametrize("name", ["*", "team-*", "dev?", "*@example.com"])
def test_wildcards_in_interaction_are_refused(block, name):
    problems = refusal({"interaction": {block: ["general", name]}})

    assert problems == [f"$.interaction.{block}[1]: wildcards are not allowed"]


def test_exact_interaction_names_are_kept():
    policy = validate_runtime_policy(
        {"interaction": {"allowed_channels": ["C0123", "#general"], "reply_mode": "thread"}}
    )

    assert policy["interaction"] == {
        "allowed_channels": ["C0123", "#general"],
        "allowed_users": [],
        "reply_mode": "thread",
    }


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"reserve_tokens": 128_000}, "reserve_tokens must be less than max_tokens (got 128000 >= 128000)"),
        (
            {"max_tokens": 1_000, "reserve_tokens": 4_000},
            "reserve_tokens must be less than max_tokens (got 4000 >= 1000)",
        ),
    ],
)
def test_reserve_tokens_must_leave_room_in_the_budget(context, message):
    assert refusal({"context": context}) == [f"$.context: {message}"]


def test_allowed_agents_must_be_distinct_agent_keys():
    accepted = validate_runtime_policy({"children": {"allowed_agents": ["writer", "fact_checker-2"]}})

    assert accepted["children"]["allowed_agents"] == ["writer", "fact_checker-2"]
    assert refusal({"children": {"allowed_agents": ["writer", "Writer", "a" * 51, "ok\n"]}}) == [
        "$.children.allowed_agents[1]: must match ^[a-z0-9_-]{1,50}$",
        "$.children.allowed_agents[2]: must match ^[a-z0-9_-]{1,50}$",
        "$.children.allowed_agents[3]: must match ^[a-z0-9_-]{1,50}$",
    ]
    assert refusal({"children": {"allowed_agents": ["writer", "editor", "writer"]}}) == [
        "$.children.allowed_agents: must not repeat 'writer'"
    ]


def test_a_partial_policy_keeps_its_values_and_fills_in_the_rest():
    policy = validate_runtime_policy({"children": {"max_depth": 2}, "app": {"reasoning_effort": "low"}})

    assert policy["children"] == default_runtime_policy()["children"] | {"max_depth": 2}
    assert policy["app"]["reasoning_effort"] == "low"
    assert policy["app"]["direct_completion"] == default_runtime_policy()["app"]["direct_completion"]
    assert policy | {"children": None, "app": None} == default_runtime_policy() | {"children": None, "app": None}


def test_a_normalised_policy_validates_to_itself():
    policy = validate_runtime_policy({"children": {"allowed_agents": ["writer"]}, "context": {"history_share": 0.3}})

    assert validate_runtime_policy(json.loads(json.dumps(policy))) == policy


@pytest.mark.parametrize("data", [[], [{}], "{}", "", 3, None, True])
def test_anything_but_a_json_object_is_refused(data):
    assert refusal(data) == ["$: must be a JSON object"]


def test_problems_are_reported_under_the_given_field():
    with pytest.raises(ValidationError) as caught:
        validate_runtime_policy({"max_iterations": 0}, field="policy")

    assert caught.value.message_dict == {"policy": ["$.max_iterations: must be at least 1 (got 0)"]}


def test_omitting_the_policy_keeps_the_previous_one():
    previous = validate_runtime_policy({"max_iterations": 40})

    assert resolve_runtime_policy(None, previous) is previous


def test_omitting_the_policy_with_no_previous_one_gives_the_defaults():
    assert resolve_runtime_policy(None, None) == default_runtime_policy()


def test_an_empty_policy_resets_to_the_defaults():
    previous = validate_runtime_policy({"max_iterations": 40, "children": {"max_depth": 3}})

    assert resolve_runtime_policy({}, previous) == default_runtime_policy()


def test_a_new_policy_replaces_the_previous_one_whole():
    previous = validate_runtime_policy({"max_iterations": 40})

    resolved = resolve_runtime_policy({"children": {"max_depth": 3}}, previous)

    assert resolved["max_iterations"] == 16
    assert resolved["children"]["max_depth"] == 3


def test_a_bad_new_policy_is_refused_even_with_a_previous_one():
    with pytest.raises(ValidationError) as caught:
        resolve_runtime_policy({"children": {"max_depth": 9}}, default_runtime_policy())

    assert caught.value.message_dict == {"runtime_policy": ["$.children.max_depth: must be at most 4 (got 9)"]}


def test_a_stored_policy_parses_into_a_typed_object():
    policy = parse_runtime_policy(validate_runtime_policy({"children": {"max_depth": 2, "allowed_agents": ["writer"]}}))

    assert isinstance(policy, RuntimePolicy)
    assert policy.children.max_depth == 2
    assert policy.children.allowed_agents == ["writer"]
    assert policy.app.direct_completion.timeout_ms == 15_000


def test_a_corrupt_stored_policy_raises_a_django_validation_error():
    with pytest.raises(ValidationError) as caught:
        parse_runtime_policy({"max_iterations": 0})

    assert caught.value.message_dict == {"runtime_policy": ["$.max_iterations: must be at least 1 (got 0)"]}


def test_the_json_schema_has_a_default_and_a_description_for_every_field():
    schema = runtime_policy_json_schema()
    models = [schema, *schema["$defs"].values()]
    fields = [(model["title"], name, spec) for model in models for name, spec in model["properties"].items()]

    assert {model["title"] for model in models} == {
        "RuntimePolicy",
        "ContextPolicy",
        "PruningPolicy",
        "MemoryFlushPolicy",
        "SessionPolicy",
        "ChildrenPolicy",
        "AppPolicy",
        "DirectCompletionPolicy",
        "InteractionPolicy",
    }
    assert [(title, name) for title, name, spec in fields if "default" not in spec] == []
    assert [(title, name) for title, name, spec in fields if not spec.get("description")] == []
    assert schema["properties"]["children"]["default"] == default_runtime_policy()["children"]
    assert schema["$defs"]["ChildrenPolicy"]["properties"]["max_depth"] | {"description": ""} == {
        "default": 1,
        "description": "",
        "maximum": 4,
        "minimum": 0,
        "title": "Max Depth",
        "type": "integer",
    }


@pytest.mark.parametrize("block", ["session", "memory_flush", "interaction"])
def test_the_schema_says_which_blocks_are_not_enforced_yet(block):
    schema = runtime_policy_json_schema()

    assert schema["properties"][block]["description"] == "Stored and validated; enforced once conversations exist."


def test_the_schema_command_prints_the_schema(capsys):
    call_command("runtime_policy_schema")

    printed = capsys.readouterr().out
    assert json.loads(printed) == runtime_policy_json_schema()
    assert printed.startswith('{\n  "$defs": {\n')
