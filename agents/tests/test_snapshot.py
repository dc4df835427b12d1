import hashlib

import pytest
from django.core.exceptions import ValidationError

from agents.policy import default_runtime_policy
from agents.snapshot import SNAPSHOT_KEYS, apply_changes, canonical_json, content_hash, normalize_snapshot

# The snapshot every other test starts from: two sections, one skill, a custom policy.
WRITER = {
    "identity": {"name": "Camille", "role": "Writer", "persona": "Curious.", "language": "fr", "goals": ["Draft"]},
    "sections": [
        {"key": "method", "title": "Method", "body": "Plan first."},
        {"key": "sources", "title": "Sources", "body": "Never invent."},
    ],
    "onboarding": "Ask who reads.",
    "skills": [{"key": "house-style", "title": "House style", "body": "Short sentences.", "shared": True}],
    "runtime_policy": {"max_iterations": 32},
}


def refusal(data: object) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        normalize_snapshot(data)
    return caught.value.message_dict


def change_refusal(base: dict, changes: object) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        apply_changes(base, changes)
    return caught.value.message_dict


# --- the canonical form ---------------------------------------------------------------
def test_an_empty_snapshot_gets_every_key_with_its_default():
    snapshot = normalize_snapshot({})

    assert snapshot == {
        "schema": 1,
        "identity": {"name": "", "role": "", "persona": "", "language": "", "goals": []},
        "system_prompt": None,
        "sections": [],
        "onboarding": "",
        "skills": [],
        "runtime_policy": default_runtime_policy(),
        "allowed_tool_names": [],
        "preset": None,
    }
    assert set(snapshot) == {"schema", *SNAPSHOT_KEYS}


def test_sections_and_skills_get_every_field():
    snapshot = normalize_snapshot({"sections": [{"key": "method"}], "skills": [{"key": "house-style"}]})

    assert snapshot["sections"] == [{"key": "method", "title": "", "body": "", "position": 0, "enabled": True}]
    assert snapshot["skills"] == [{"key": "house-style", "title": "", "body": "", "shared": False}]


def test_positions_are_renumbered_in_list_order():
    snapshot = normalize_snapshot(
        {"sections": [{"key": "last", "position": 7}, {"key": "first", "position": 3}, {"key": "mid", "position": 0}]}
    )

    assert [(s["key"], s["position"]) for s in snapshot["sections"]] == [("last", 0), ("first", 1), ("mid", 2)]


def test_canonical_json_sorts_keys_and_keeps_unicode():
    assert canonical_json({"b": 1, "a": {"y": "é", "x": [2, 1]}}) == '{"a":{"x":[2,1],"y":"é"},"b":1}'


def test_content_hash_is_the_sha256_of_the_canonical_json():
    snapshot = normalize_snapshot(WRITER)

    assert content_hash(snapshot) == hashlib.sha256(canonical_json(snapshot).encode()).hexdigest()


def test_key_order_changes_neither_the_canonical_json_nor_the_hash():
    reordered = {key: WRITER[key] for key in reversed(list(WRITER))}
    reordered["identity"] = dict(reversed(list(WRITER["identity"].items())))

    first, second = normalize_snapshot(WRITER), normalize_snapshot(reordered)

    assert list(reordered) != list(WRITER)
    assert canonical_json(first) == canonical_json(second)
    assert content_hash(first) == content_hash(second)


def test_a_normalised_snapshot_normalises_to_itself():
    snapshot = normalize_snapshot(WRITER)

    assert normalize_snapshot(snapshot) == snapshot
    assert content_hash(normalize_snapshot(snapshot)) == content_hash(snapshot)


def test_equal_content_spelled_with_and_without_defaults_has_one_hash():
    explicit = {**WRITER, "system_prompt": None, "allowed_tool_names": [], "schema": 1}

    assert content_hash(normalize_snapshot(explicit)) == content_hash(normalize_snapshot(WRITER))


# --- refusals, keyed by top-level field -----------------------------------------------
def test_a_duplicate_section_key_is_refused():
    assert refusal({"sections": [{"key": "method"}, {"key": "tone"}, {"key": "method"}]}) == {
        "sections": ["$.sections[2].key: duplicate key 'method'"]
    }


def test_a_duplicate_skill_key_is_refused():
    assert refusal({"identity": {"name": "x"}, "skills": [{"key": "s"}, {"key": "s"}]}) == {
        "skills": ["$.skills[1].key: duplicate key 's'"]
    }


@pytest.mark.parametrize("key", ["Method", "with space", "", "x" * 51, "é"])
def test_a_bad_section_key_is_refused(key):
    assert refusal({"sections": [{"key": "ok"}, {"key": key}]}) == {
        "sections": ["$.sections[1].key: must match ^[a-z0-9_-]{1,50}$"]
    }


def test_an_unknown_top_level_key_is_refused_under_its_name():
    assert refusal({"identity": {"name": "x"}, "tools": ["search"]}) == {"tools": ["$.tools: unknown field"]}


def test_an_unknown_identity_field_is_refused_with_its_path():
    assert refusal({"identity": {"name": "x", "mood": "calm"}}) == {"identity": ["$.identity.mood: unknown field"]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"identity": "Camille"}, {"identity": ["$.identity: must be a JSON object"]}),
        ({"identity": {"goals": "draft"}}, {"identity": ["$.identity.goals: must be a JSON array"]}),
        ({"identity": {"name": 7}}, {"identity": ["$.identity.name: must be a string"]}),
        ({"system_prompt": 5}, {"system_prompt": ["$.system_prompt: must be a string"]}),
        ({"sections": {"key": "method"}}, {"sections": ["$.sections: must be a JSON array"]}),
        ({"sections": [{"key": "m", "position": "1"}]}, {"sections": ["$.sections[0].position: must be an integer"]}),
        ({"sections": [{"key": "m", "enabled": 1}]}, {"sections": ["$.sections[0].enabled: must be a boolean"]}),
        ({"skills": [{"key": "s", "shared": "yes"}]}, {"skills": ["$.skills[0].shared: must be a boolean"]}),
        ({"onboarding": ["hello"]}, {"onboarding": ["$.onboarding: must be a string"]}),
        ({"runtime_policy": "strict"}, {"runtime_policy": ["$.runtime_policy: must be a JSON object"]}),
        ({"allowed_tool_names": "search"}, {"allowed_tool_names": ["$.allowed_tool_names: must be a JSON array"]}),
        ({"schema": 2}, {"schema": ["$.schema: must be 1"]}),
    ],
)
def test_a_wrong_type_is_refused_under_its_top_level_field(data, expected):
    assert refusal(data) == expected


def test_anything_but_an_object_is_refused():
    assert refusal(["identity"]) == {"snapshot": ["$: must be a JSON object"]}


def test_every_field_reports_its_problems_at_once():
    errors = refusal({"identity": "Camille", "sections": "method", "onboarding": 3})

    assert errors == {
        "identity": ["$.identity: must be a JSON object"],
        "sections": ["$.sections: must be a JSON array"],
        "onboarding": ["$.onboarding: must be a string"],
    }


def test_a_tool_listed_twice_is_refused():
    assert refusal({"identity": {"name": "x"}, "allowed_tool_names": ["search", "fetch", "search"]}) == {
        "allowed_tool_names": ["$.allowed_tool_names: listed twice: search"]
    }


def test_too_many_sections_are_refused_past_the_setting(settings):
    settings.AIHUMMER_MAX_SECTIONS = 2
    two = [{"key": "a"}, {"key": "b"}]

    assert len(normalize_snapshot({"sections": two})["sections"]) == 2
    assert refusal({"sections": [*two, {"key": "c"}]}) == {"sections": ["$.sections: at most 2 sections (got 3)"]}


def test_too_many_skills_are_refused_past_the_setting(settings):
    settings.AIHUMMER_MAX_SKILLS = 1

    assert refusal({"skills": [{"key": "a"}, {"key": "b"}]}) == {"skills": ["$.skills: at most 1 skills (got 2)"]}


def test_an_oversized_section_body_is_refused_past_the_setting(settings):
    settings.AIHUMMER_MAX_TEXT_CHARS = 100

    assert normalize_snapshot({"sections": [{"key": "a", "body": "x" * 100}]})["sections"][0]["body"] == "x" * 100
    assert refusal({"sections": [{"key": "a"}, {"key": "b", "body": "x" * 101}]}) == {
        "sections": ["$.sections[1].body: at most 100 characters (got 101)"]
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"identity": {"persona": "x" * 101}}, {"identity": ["$.identity.persona: at most 100 characters (got 101)"]}),
        ({"system_prompt": "x" * 101}, {"system_prompt": ["$.system_prompt: at most 100 characters (got 101)"]}),
        ({"onboarding": "x" * 101}, {"onboarding": ["$.onboarding: at most 100 characters (got 101)"]}),
        (
            {"skills": [{"key": "s", "body": "x" * 101}]},
            {"skills": ["$.skills[0].body: at most 100 characters (got 101)"]},
        ),
    ],
)
def test_every_long_text_is_refused_past_the_setting(settings, data, expected):
    settings.AIHUMMER_MAX_TEXT_CHARS = 100

    assert refusal(data) == expected


def test_an_oversized_snapshot_is_refused_as_a_whole(settings):
    data = {"identity": {"name": "Camille", "persona": "x" * 500}, "onboarding": "y" * 500}
    size = len(canonical_json(normalize_snapshot(data)))
    settings.AIHUMMER_MAX_SNAPSHOT_CHARS = size

    assert normalize_snapshot(data)["onboarding"] == "y" * 500

    settings.AIHUMMER_MAX_SNAPSHOT_CHARS = size - 1

    assert refusal(data) == {"snapshot": [f"$: the whole snapshot is {size} characters; at most {size - 1}"]}


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_a_blank_system_prompt_is_refused(blank):
    assert refusal({"system_prompt": blank}) == {
        "system_prompt": ["$.system_prompt: must not be blank (use null for no override)"]
    }


def test_a_null_system_prompt_means_no_override():
    assert normalize_snapshot({"identity": {"name": "x"}, "system_prompt": None})["system_prompt"] is None


# --- the runtime policy inside a snapshot ---------------------------------------------
def test_the_runtime_policy_is_stored_with_its_defaults_filled_in():
    policy = normalize_snapshot(WRITER)["runtime_policy"]

    assert policy == {**default_runtime_policy(), "max_iterations": 32}


def test_runtime_policy_errors_come_through_under_runtime_policy_with_their_path():
    errors = refusal({"runtime_policy": {"children": {"max_depth": 9, "pets": 1}, "max_iterations": 0}})

    # Compared without their root: see the xfail below on where the path should start.
    assert list(errors) == ["runtime_policy"]
    assert sorted(m.removeprefix("$.").removeprefix("runtime_policy.") for m in errors["runtime_policy"]) == [
        "children.max_depth: must be at most 4 (got 9)",
        "children.pets: unknown field",
        "max_iterations: must be at least 1 (got 0)",
    ]


def test_runtime_policy_errors_are_rooted_at_the_snapshot_like_every_other_field():
    assert refusal({"runtime_policy": {"children": {"max_depth": 9}}}) == {
        "runtime_policy": ["$.runtime_policy.children.max_depth: must be at most 4 (got 9)"]
    }


# --- apply_changes --------------------------------------------------------------------
def test_identity_changes_merge_field_by_field():
    base = normalize_snapshot(WRITER)

    changed = apply_changes(base, {"identity": {"role": "Editor", "goals": ["Cut", "Check"]}})

    assert changed["identity"] == {
        "name": "Camille",
        "role": "Editor",
        "persona": "Curious.",
        "language": "fr",
        "goals": ["Cut", "Check"],
    }
    assert changed["sections"] == base["sections"]


def test_sections_are_replaced_wholesale():
    base = normalize_snapshot(WRITER)

    changed = apply_changes(base, {"sections": [{"key": "tone", "body": "Warm."}]})

    assert changed["sections"] == [{"key": "tone", "title": "", "body": "Warm.", "position": 0, "enabled": True}]
    assert changed["skills"] == base["skills"]


def test_omitting_the_runtime_policy_keeps_the_previous_one():
    base = normalize_snapshot(WRITER)

    changed = apply_changes(base, {"onboarding": "Say hello."})

    assert changed["runtime_policy"]["max_iterations"] == 32
    assert changed["runtime_policy"] == base["runtime_policy"]
    assert changed["onboarding"] == "Say hello."


def test_an_empty_runtime_policy_resets_it_to_the_defaults():
    base = normalize_snapshot(WRITER)

    changed = apply_changes(base, {"runtime_policy": {}})

    assert changed["runtime_policy"] == default_runtime_policy()


def test_a_new_runtime_policy_replaces_the_previous_one_whole():
    base = normalize_snapshot(WRITER)

    changed = apply_changes(base, {"runtime_policy": {"children": {"max_depth": 2}}})

    assert changed["runtime_policy"]["children"]["max_depth"] == 2
    assert changed["runtime_policy"]["max_iterations"] == 16


def test_no_change_gives_back_the_same_hash():
    base = normalize_snapshot(WRITER)

    assert content_hash(apply_changes(base, {})) == content_hash(base)


def test_an_unknown_change_key_is_refused_naming_the_known_ones():
    assert change_refusal(normalize_snapshot(WRITER), {"tools": [], "schema": 2}) == {
        "schema": [
            "unknown snapshot key; use one of: identity, system_prompt, sections, onboarding, skills, "
            "runtime_policy, allowed_tool_names, preset"
        ],
        "tools": [
            "unknown snapshot key; use one of: identity, system_prompt, sections, onboarding, skills, "
            "runtime_policy, allowed_tool_names, preset"
        ],
    }


def test_changes_are_validated_like_a_whole_snapshot():
    base = normalize_snapshot(WRITER)

    assert change_refusal(base, {"identity": {"mood": "calm"}}) == {"identity": ["$.identity.mood: unknown field"]}
    assert change_refusal(base, {"identity": "Hugo"}) == {"identity": ["$.identity: must be a JSON object"]}
    assert change_refusal(base, ["identity"]) == {"changes": ["$: must be a JSON object"]}
    assert change_refusal(base, {"runtime_policy": {"max_iterations": 0}})["runtime_policy"][0].endswith(
        ".max_iterations: must be at least 1 (got 0)"
    )
