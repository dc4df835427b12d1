import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from agents.policy import (
    default_runtime_policy,
    parse_runtime_policy,
    resolve_runtime_policy,
    runtime_policy_json_schema,
    runtime_policy_sections,
    upgrade_stored_policy,
    validate_runtime_policy,
)
from agents.policy_models import OWN_FIELD, RuntimePolicy
from agents.tests.helpers import BOUNDS, ROOMY_CONTEXT, first_release, policy_with, value_at


def refusal(data: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        validate_runtime_policy(data)
    return caught.value.message_dict["runtime_policy"]


# Every field the product document names ("Politique d'exécution"), by its path.
DOCUMENT_FIELDS = [
    "context.max_tokens",
    "context.reserve_tokens",
    "context.history_share",
    "context.max_history_messages",
    "context.bootstrap_max_chars",
    "pruning.ttl_seconds",
    "pruning.keep_last_assistants",
    "pruning.soft_trim_ratio",
    "pruning.head_chars",
    "pruning.tail_chars",
    "pruning.hard_clear_ratio",
    "pruning.placeholder",
    "memory_flush.soft_threshold_tokens",
    "session.idle_reset_minutes",
    "session.index_prune_after_days",
    "session.index_max_entries",
    "session.scope",
    "children.max_depth",
    "children.max_concurrent",
    "children.max_per_parent",
    "children.timeout_seconds",
    "children.archive_after_minutes",
    "max_iterations",
    "app.reasoning_effort",
    "app.service_tier",
    "app.direct_completion.mode",
    "app.direct_completion.max_tokens",
    "app.direct_completion.timeout_ms",
    "interaction.user_ids",
    "interaction.session_agent_ids",
    "interaction.spawn_agent_ids",
    "interaction.session_visibility",
    "interaction.session_send",
    "interaction.child_tool_deny",
    "interaction.child_leaf_tool_deny",
    "interaction.elevated_telegram_user_ids",
]
# Ours, kept because they contradict nothing in the document (their descriptions say so).
OWN_FIELDS = ["memory_flush.enabled"]
INTERACTION_DEFAULTS = {
    "user_ids": None,
    "spawn_agent_ids": None,
    "session_agent_ids": [],
    "session_visibility": "self",
    "session_send": False,
    "child_tool_deny": [],
    "child_leaf_tool_deny": [],
    "elevated_telegram_user_ids": [],
}


def test_an_empty_policy_is_the_documented_defaults():
    policy = validate_runtime_policy({})

    assert policy == {
        "version": 1,
        "context": {
            "max_tokens": None,
            "reserve_tokens": 4_096,
            "history_share": 0.5,
            "max_history_messages": 200,
            "bootstrap_max_chars": 20_000,
        },
        "pruning": {
            "ttl_seconds": 300,
            "keep_last_assistants": 3,
            "soft_trim_ratio": 0.3,
            "head_chars": 1_500,
            "tail_chars": 1_500,
            "hard_clear_ratio": 0.5,
            "placeholder": "[older tool result trimmed]",
        },
        "memory_flush": {"enabled": True, "soft_threshold_tokens": 4_000},
        "session": {
            "scope": "per-channel-peer",
            "idle_reset_minutes": None,
            "index_prune_after_days": None,
            "index_max_entries": None,
        },
        "children": {
            "max_depth": None,
            "max_concurrent": 2,
            "max_per_parent": 3,
            "timeout_seconds": None,
            "archive_after_minutes": 60,
        },
        "max_iterations": 16,
        "app": {
            "reasoning_effort": None,
            "service_tier": None,
            "direct_completion": {"mode": "auto", "max_tokens": 1_024, "timeout_ms": 15_000},
        },
        "interaction": INTERACTION_DEFAULTS,
    }


def test_every_field_of_the_document_and_no_other_is_there_by_its_name():
    def paths(node: dict, prefix: str = "") -> list[str]:
        found = []
        for name, value in node.items():
            path = f"{prefix}{name}"
            found += paths(value, f"{path}.") if isinstance(value, dict) else [path]
        return found

    assert sorted(paths(default_runtime_policy())) == sorted(["version", *DOCUMENT_FIELDS, *OWN_FIELDS])


def test_the_default_policy_is_a_fresh_copy_each_time():
    first = default_runtime_policy()
    first["interaction"]["child_tool_deny"].append("delegate")

    assert default_runtime_policy() == validate_runtime_policy({})
    assert default_runtime_policy()["interaction"]["child_tool_deny"] == []


@pytest.mark.parametrize(("path", "edge", "past", "message"), BOUNDS)
def test_each_bound_is_accepted_at_its_edge_and_refused_just_past_it(path, edge, past, message):
    accepted = validate_runtime_policy(policy_with(path, edge, ROOMY_CONTEXT))
    problems = refusal(policy_with(path, past, ROOMY_CONTEXT))

    assert value_at(accepted, path) == edge
    assert problems == [f"$.{path}: {message}"]


@pytest.mark.parametrize(
    "path",
    [
        "context.max_tokens",
        "session.idle_reset_minutes",
        "session.index_prune_after_days",
        "session.index_max_entries",
        "app.reasoning_effort",
        "app.service_tier",
    ],
)
def test_null_is_accepted_where_the_document_means_none(path):
    assert value_at(validate_runtime_policy(policy_with(path, None)), path) is None


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"max_iteration": 3}, "$.max_iteration"),
        ({"children": {"foo": 1}}, "$.children.foo"),
        ({"app": {"direct_completion": {"stream": True}}}, "$.app.direct_completion.stream"),
        ({"allowed agents": []}, "$['allowed agents']"),
        # The first release's names are gone: a client uses the document's.
        ({"session": {"idle_minutes": 5}}, "$.session.idle_minutes"),
        ({"pruning": {"keep_last_tool_results": 1}}, "$.pruning.keep_last_tool_results"),
        ({"app": {"direct_completion": {"enabled": True}}}, "$.app.direct_completion.enabled"),
        ({"interaction": {"allowed_users": ["u1"]}}, "$.interaction.allowed_users"),
    ],
)
def test_an_unknown_field_is_refused_with_its_path(policy, path):
    assert refusal(policy) == [f"{path}: unknown field"]


def test_every_problem_is_reported_at_once():
    problems = refusal(
        {
            "children": {"max_depth": 9, "foo": 1},
            "max_iterations": "3",
            "session": {"scope": "everyone"},
            "colour": "blue",
        }
    )

    assert problems == [
        "$.session.scope: must be one of: per-peer, per-channel-peer",
        "$.children.max_depth: must be at most 4 (got 9)",
        "$.children.foo: unknown field",
        "$.max_iterations: must be an integer",
        "$.colour: unknown field",
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"max_iterations": "3"}, "$.max_iterations: must be an integer"),
        ({"max_iterations": 3.0}, "$.max_iterations: must be an integer"),
        ({"max_iterations": True}, "$.max_iterations: must be an integer"),
        ({"memory_flush": {"enabled": 1}}, "$.memory_flush.enabled: must be a boolean"),
        ({"memory_flush": {"enabled": "true"}}, "$.memory_flush.enabled: must be a boolean"),
        ({"pruning": {"placeholder": 5}}, "$.pruning.placeholder: must be a string"),
        ({"context": {"history_share": "0.5"}}, "$.context.history_share: must be a number"),
        ({"context": {"history_share": True}}, "$.context.history_share: must be a number"),
        ({"context": {"max_tokens": "8000"}}, "$.context.max_tokens: must be an integer"),
        ({"session": {"idle_reset_minutes": 1.5}}, "$.session.idle_reset_minutes: must be an integer"),
        ({"children": "none"}, "$.children: must be a JSON object"),
        ({"interaction": {"spawn_agent_ids": "writer"}}, "$.interaction.spawn_agent_ids: must be a JSON array"),
        ({"interaction": {"spawn_agent_ids": [7]}}, "$.interaction.spawn_agent_ids[0]: must be a string"),
        ({"children": {"max_depth": "2"}}, "$.children.max_depth: must be an integer"),
        ({"version": 2}, "$.version: must be 1"),
        ({"version": True}, "$.version: must be 1"),
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
    policy = validate_runtime_policy({"pruning": {"soft_trim_ratio": 0, "hard_clear_ratio": 1}})

    assert policy["pruning"]["hard_clear_ratio"] == 1.0
    assert isinstance(policy["pruning"]["hard_clear_ratio"], float)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"max_tokens": 4_096}, "reserve_tokens must be less than max_tokens (got 4096 >= 4096)"),
        (
            {"max_tokens": 1_000, "reserve_tokens": 4_000},
            "reserve_tokens must be less than max_tokens (got 4000 >= 1000)",
        ),
    ],
)
def test_reserve_tokens_must_leave_room_in_an_explicit_budget(context, message):
    assert refusal({"context": context}) == [f"$.context: {message}"]


def test_a_large_reserve_is_accepted_while_the_budget_is_the_models():
    assert validate_runtime_policy({"context": {"reserve_tokens": 200_000}})["context"]["max_tokens"] is None


def test_the_soft_trim_never_starts_after_the_hard_clear():
    accepted = validate_runtime_policy({"pruning": {"soft_trim_ratio": 0.6, "hard_clear_ratio": 0.6}})

    assert accepted["pruning"]["soft_trim_ratio"] == 0.6
    assert refusal({"pruning": {"soft_trim_ratio": 0.7, "hard_clear_ratio": 0.6}}) == [
        "$.pruning: soft_trim_ratio must not exceed hard_clear_ratio (got 0.7 > 0.6)"
    ]


@pytest.mark.parametrize("field", ["allowed_users", "allowed_channels", "reply_mode"])
def test_the_first_releases_interaction_fields_stay_unknown(field):
    assert refusal({"interaction": {field: []}}) == [f"$.interaction.{field}: unknown field"]


def test_children_allowed_agents_is_now_interaction_spawn_agent_ids():
    assert refusal({"children": {"allowed_agents": ["writer"]}}) == ["$.children.allowed_agents: unknown field"]


@pytest.mark.parametrize("field", ["spawn_agent_ids", "session_agent_ids"])
def test_agent_lists_must_be_distinct_agent_keys(field):
    accepted = validate_runtime_policy({"interaction": {field: ["writer", "fact_checker-2"]}})

    assert accepted["interaction"][field] == ["writer", "fact_checker-2"]
    assert refusal({"interaction": {field: ["writer", "Writer", "a" * 51, "ok\n", "*"]}}) == [
        f"$.interaction.{field}[{n}]: must match ^[a-z0-9_-]{{1,50}}$" for n in range(1, 5)
    ]
    assert refusal({"interaction": {field: ["writer", "editor", "writer"]}}) == [
        f"$.interaction.{field}: must not repeat 'writer'"
    ]


def test_user_ids_name_verified_peers_and_no_wildcard():
    peers = ["user:3", "api_key:7", "api_key:7/tg-42", "telegram:123456"]
    accepted = validate_runtime_policy({"interaction": {"user_ids": peers}})

    assert accepted["interaction"]["user_ids"] == peers
    problems = refusal({"interaction": {"user_ids": ["*", "user:*", "user:", "everyone", "user:1 user:2"]}})
    assert len(problems) == 5
    assert all(p.startswith("$.interaction.user_ids[") and ": must match ^(" in p for p in problems)
    assert refusal({"interaction": {"user_ids": ["user:3", "user:3"]}}) == [
        "$.interaction.user_ids: must not repeat 'user:3'"
    ]


def test_tool_deny_lists_name_tools():
    accepted = validate_runtime_policy(
        {"interaction": {"child_tool_deny": ["mail_send"], "child_leaf_tool_deny": ["delegate", "http_request"]}}
    )

    assert accepted["interaction"]["child_leaf_tool_deny"] == ["delegate", "http_request"]
    assert refusal({"interaction": {"child_tool_deny": ["Mail", "*"]}}) == [
        "$.interaction.child_tool_deny[0]: must match ^[a-z][a-z0-9_]{0,63}$",
        "$.interaction.child_tool_deny[1]: must match ^[a-z][a-z0-9_]{0,63}$",
    ]


def test_session_visibility_is_self_agent_or_granted():
    for choice in ("self", "agent", "granted"):
        assert (
            validate_runtime_policy({"interaction": {"session_visibility": choice}})["interaction"][
                "session_visibility"
            ]
            == choice
        )
    assert refusal({"interaction": {"session_visibility": "tenant"}}) == [
        "$.interaction.session_visibility: must be one of: self, agent, granted"
    ]
    assert refusal({"interaction": {"session_send": "yes"}}) == ["$.interaction.session_send: must be a boolean"]


def test_elevated_telegram_users_must_be_among_user_ids():
    listed = {"user_ids": ["telegram:8", "user:3"], "elevated_telegram_user_ids": ["telegram:8"]}

    assert validate_runtime_policy({"interaction": listed})["interaction"]["elevated_telegram_user_ids"] == [
        "telegram:8"
    ]
    assert refusal({"interaction": {**listed, "elevated_telegram_user_ids": ["telegram:8", "telegram:9"]}}) == [
        "$.interaction: elevated_telegram_user_ids must be a subset of user_ids (not in it: telegram:9)"
    ]
    assert refusal({"interaction": {"elevated_telegram_user_ids": ["telegram:9"]}}) == [
        "$.interaction: elevated_telegram_user_ids must be a subset of user_ids (not in it: telegram:9)"
    ]
    assert refusal({"interaction": {"user_ids": ["user:3"], "elevated_telegram_user_ids": ["user:3"]}}) == [
        "$.interaction.elevated_telegram_user_ids[0]: must match ^telegram:[0-9]{1,20}$"
    ]


def test_children_limits_may_be_null_to_take_the_global_settings():
    policy = validate_runtime_policy({"children": {"max_depth": None, "timeout_seconds": None}})

    assert (policy["children"]["max_depth"], policy["children"]["timeout_seconds"]) == (None, None)
    assert validate_runtime_policy({"children": {"max_depth": 4, "timeout_seconds": 172_800}})["children"] == (
        default_runtime_policy()["children"] | {"max_depth": 4, "timeout_seconds": 172_800}
    )


def test_a_partial_policy_keeps_its_values_and_fills_in_the_rest():
    policy = validate_runtime_policy({"children": {"max_depth": 2}, "app": {"reasoning_effort": "low"}})

    assert policy["children"] == default_runtime_policy()["children"] | {"max_depth": 2}
    assert policy["app"]["reasoning_effort"] == "low"
    assert policy["app"]["direct_completion"] == default_runtime_policy()["app"]["direct_completion"]
    assert policy | {"children": None, "app": None} == default_runtime_policy() | {"children": None, "app": None}


def test_a_normalised_policy_validates_to_itself():
    policy = validate_runtime_policy(
        {"interaction": {"spawn_agent_ids": ["writer"]}, "context": {"history_share": 0.3}}
    )

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
    policy = parse_runtime_policy(
        validate_runtime_policy({"children": {"max_depth": 2}, "interaction": {"spawn_agent_ids": ["writer"]}})
    )

    assert isinstance(policy, RuntimePolicy)
    assert policy.children.max_depth == 2
    assert policy.interaction.spawn_agent_ids == ["writer"]
    assert policy.app.direct_completion.timeout_ms == 15_000


def test_a_corrupt_stored_policy_raises_a_django_validation_error():
    with pytest.raises(ValidationError) as caught:
        parse_runtime_policy({"max_iterations": 0})

    assert caught.value.message_dict == {"runtime_policy": ["$.max_iterations: must be at least 1 (got 0)"]}


def test_the_json_schema_has_a_default_and_a_description_for_every_field():
    schema = runtime_policy_json_schema()
    models = [schema, *schema["$defs"].values()]
    fields = [(model["title"], name, spec) for model in models for name, spec in model.get("properties", {}).items()]

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
        "anyOf": [{"maximum": 4, "minimum": 0, "type": "integer"}, {"type": "null"}],
        "default": None,
        "description": "",
        "title": "Max Depth",
    }
    assert schema["$defs"]["SessionPolicy"]["properties"]["scope"]["enum"] == ["per-peer", "per-channel-peer"]


def test_the_schema_says_which_fields_are_aihummers_own_and_promises_nothing():
    schema = runtime_policy_json_schema()
    block_of = {"memory_flush": "MemoryFlushPolicy", "children": "ChildrenPolicy"}
    descriptions = json.dumps(schema)

    for path in OWN_FIELDS:
        block, name = path.split(".")
        assert OWN_FIELD in schema["$defs"][block_of[block]]["properties"][name]["description"]
    assert descriptions.count(OWN_FIELD) == len(OWN_FIELDS)
    assert "enforced once" not in descriptions
    assert "conversations exist" not in descriptions


def test_the_schema_command_prints_the_schema(capsys):
    call_command("runtime_policy_schema")

    printed = capsys.readouterr().out
    assert json.loads(printed) == runtime_policy_json_schema()
    assert printed.startswith('{\n  "$defs": {\n')


def test_the_first_releases_defaults_become_the_documents_defaults():
    # Its stored limits stay numbers: they replace the globals now, as they were under their defaults.
    assert upgrade_stored_policy(first_release()) == default_runtime_policy() | {
        "children": default_runtime_policy()["children"] | {"max_depth": 1, "timeout_seconds": 600}
    }


def test_values_chosen_in_the_first_release_keep_their_meaning():
    upgraded = upgrade_stored_policy(
        first_release(
            context={"max_tokens": 64_000, "history_share": 0.3},
            pruning={"keep_last_tool_results": 5, "max_tool_result_chars": 800, "placeholder": "[cut]"},
            session={"idle_minutes": 30, "max_turns": 9},
            children={"max_depth": 3, "allowed_agents": ["writer"]},
            max_iterations=40,
            app={
                "reasoning_effort": "low",
                "direct_completion": {"enabled": True, "max_tokens": 512, "timeout_ms": 900},
            },
            interaction={"allowed_channels": ["C1"], "allowed_users": ["U1"], "reply_mode": "thread"},
        )
    )

    assert validate_runtime_policy(upgraded) == upgraded
    assert upgraded["context"] | {} == default_runtime_policy()["context"] | {
        "max_tokens": 64_000,
        "history_share": 0.3,
    }
    assert upgraded["pruning"] == default_runtime_policy()["pruning"] | {
        "keep_last_assistants": 5,
        "head_chars": 800,
        "tail_chars": 0,
        "placeholder": "[cut]",
    }
    assert upgraded["session"]["idle_reset_minutes"] == 30
    assert upgraded["children"]["max_depth"] == 3
    assert "allowed_agents" not in upgraded["children"]
    assert upgraded["interaction"]["spawn_agent_ids"] == ["writer"]
    assert upgraded["max_iterations"] == 40
    assert upgraded["app"]["reasoning_effort"] == "low"
    assert upgraded["app"]["direct_completion"] == {"mode": "auto", "max_tokens": 512, "timeout_ms": 900}
    assert upgraded["interaction"] == INTERACTION_DEFAULTS | {"spawn_agent_ids": ["writer"]}


def test_disabled_pruning_becomes_ratios_that_trim_only_a_full_request():
    upgraded = upgrade_stored_policy(first_release(pruning={"enabled": False}))

    assert (upgraded["pruning"]["soft_trim_ratio"], upgraded["pruning"]["hard_clear_ratio"]) == (1.0, 1.0)


def issue_28_policy(**children: object) -> dict:
    """A policy as issue 28 stored it: children.allowed_agents, an empty interaction block."""
    policy = default_runtime_policy() | {"interaction": {}}
    policy["children"] = policy["children"] | {"max_depth": 1, "timeout_seconds": 600, "allowed_agents": []}
    policy["children"].update(children)
    return policy


@pytest.mark.parametrize(("allowed", "spawn"), [(["writer", "critic"], ["writer", "critic"]), ([], None)])
def test_issue_28s_allowed_agents_are_read_as_spawn_agent_ids(allowed, spawn):
    upgraded = upgrade_stored_policy(issue_28_policy(allowed_agents=allowed, max_depth=3))

    assert validate_runtime_policy(upgraded) == upgraded
    assert upgraded["children"] == default_runtime_policy()["children"] | {"max_depth": 3, "timeout_seconds": 600}
    assert upgraded["interaction"] == INTERACTION_DEFAULTS | {"spawn_agent_ids": spawn}
    assert parse_runtime_policy(issue_28_policy(allowed_agents=allowed)).interaction.spawn_agent_ids == spawn


def test_a_policy_in_the_documents_names_is_not_upgraded():
    policy = validate_runtime_policy({"session": {"idle_reset_minutes": 5}})

    assert upgrade_stored_policy(policy) is policy
    assert upgrade_stored_policy({}) == {}


def test_an_old_versions_policy_parses_for_the_runtime():
    policy = parse_runtime_policy(first_release(session={"idle_minutes": 15}))

    assert policy.session.idle_reset_minutes == 15


def test_the_policy_reads_as_sections_with_values_and_defaults() -> None:
    policy = default_runtime_policy()
    policy["children"]["max_concurrent"] = 4
    policy["app"]["direct_completion"]["mode"] = "always"
    del policy["max_iterations"]  # a field the stored document lacks reads as its default

    sections = {section.key: section for section in runtime_policy_sections(policy)}

    assert list(sections) == [
        "",
        "context",
        "pruning",
        "memory_flush",
        "session",
        "children",
        "app",
        "interaction",
    ]
    general = {s.name: (s.value, s.is_default) for s in sections[""].settings}
    assert general == {"version": (1, True), "max_iterations": (16, True)}
    concurrent = next(s for s in sections["children"].settings if s.name == "max_concurrent")
    assert (concurrent.value, concurrent.default, concurrent.is_default) == (4, 2, False)
    depth = next(s for s in sections["children"].settings if s.name == "max_depth")
    assert (depth.value_json, depth.is_default) == ("null", True)  # null: the global setting
    app = {s.name: s for s in sections["app"].settings}
    assert (app["direct_completion.mode"].value_json, app["direct_completion.mode"].default_json) == (
        '"always"',
        '"auto"',
    )
    assert app["reasoning_effort"].value_json == "null" and app["reasoning_effort"].is_default
    assert sections["children"].description == "Child agents: depth, number, time, listing."
    changed = [s.name for section in sections.values() for s in section.settings if not s.is_default]
    assert changed == ["max_concurrent", "direct_completion.mode"]


def test_the_turn_listing_window_default_is_the_children_policy_default():
    # The models hold the number themselves (they load no pydantic).
    from agents.models import DEFAULT_ARCHIVE_AFTER_MINUTES
    from agents.policy_models import ChildrenPolicy

    assert ChildrenPolicy().archive_after_minutes == DEFAULT_ARCHIVE_AFTER_MINUTES
