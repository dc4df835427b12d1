import hashlib
from datetime import date

import pytest

from agents.models import Agent
from agents.rendering import TRUNCATION_MARK, render_prefix, render_system_prompt, scaffolding_for
from agents.services import agent_create
from agents.snapshot import canonical_json, normalize_snapshot
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset

WRITER = normalize_snapshot(
    {
        "identity": {
            "name": "Camille",
            "role": "Writer",
            "persona": "Curious.",
            "language": "en",
            "goals": ["Draft", "Cite"],
        },
        "sections": [
            {"key": "method", "title": "Method", "body": "Plan first."},
            {"key": "draft", "title": "Draft", "body": "Work in progress.", "enabled": False},
            {"key": "sources", "title": "Sources", "body": "Never invent."},
        ],
        "onboarding": "Ask who reads.",
        "skills": [{"key": "house-style", "title": "House style", "body": "Short sentences.", "shared": True}],
    }
)
IDENTITY_BLOCK = (
    "You are Camille.\nRole: Writer\nAnswer in this language: en\nGoals:\n- Draft\n- Cite\n\n## Persona\nCurious."
)
SKILLS_BLOCK = "# Skills\n\n## House style\nShort sentences."


def test_the_first_turn_prefix_is_identity_sections_skills_then_onboarding():
    prefix = render_prefix(WRITER, first_turn=True)

    assert prefix == (
        f"{IDENTITY_BLOCK}\n\n## Method\nPlan first.\n\n## Sources\nNever invent.\n\n{SKILLS_BLOCK}\n\n"
        "## First conversation\nAsk who reads."
    )


def test_later_turns_leave_onboarding_out():
    prefix = render_prefix(WRITER)

    assert prefix == f"{IDENTITY_BLOCK}\n\n## Method\nPlan first.\n\n## Sources\nNever invent.\n\n{SKILLS_BLOCK}"
    assert "Ask who reads." not in prefix


def test_the_same_snapshot_renders_a_byte_identical_prefix_and_hash():
    copy = normalize_snapshot(dict(reversed(list(WRITER.items()))))

    first = render_system_prompt(WRITER, first_turn=True)
    second = render_system_prompt(copy, first_turn=True)

    assert first.prefix.encode() == second.prefix.encode()
    assert first.prefix_hash == second.prefix_hash == hashlib.sha256(first.prefix.encode()).hexdigest()


def test_a_system_prompt_override_keeps_only_the_skills_block():
    snapshot = normalize_snapshot({**WRITER, "system_prompt": "  You answer in haiku.  "})

    prefix = render_prefix(snapshot, first_turn=True)

    assert prefix == f"You answer in haiku.\n\n{SKILLS_BLOCK}"
    for dropped in ("Camille", "Curious.", "Plan first.", "Ask who reads."):
        assert dropped not in prefix


def test_a_system_prompt_override_without_skills_is_the_prompt_alone():
    snapshot = normalize_snapshot({"system_prompt": "You answer in haiku."})

    assert render_prefix(snapshot, first_turn=True) == "You answer in haiku."


def test_disabled_sections_are_skipped():
    prefix = render_prefix(WRITER)

    assert "## Draft" not in prefix and "Work in progress." not in prefix


def test_sections_follow_their_position_not_their_list_order():
    # A stored snapshot is renumbered in list order; rendering still trusts positions.
    snapshot = {
        "identity": {"name": "Camille"},
        "sections": [
            {"key": "c", "title": "Third", "body": "3", "position": 2, "enabled": True},
            {"key": "a", "title": "First", "body": "1", "position": 0, "enabled": True},
            {"key": "b", "title": "Second", "body": "2", "position": 1, "enabled": True},
        ],
    }

    assert render_prefix(snapshot) == "You are Camille.\n\n## First\n1\n\n## Second\n2\n\n## Third\n3"


def test_a_section_without_title_is_headed_by_its_key():
    snapshot = normalize_snapshot({"sections": [{"key": "tone", "body": "Warm."}]})

    assert render_prefix(snapshot) == "## tone\nWarm."


def test_onboarding_renders_only_on_a_first_turn():
    assert "## First conversation\nAsk who reads." in render_prefix(WRITER, first_turn=True)
    assert "First conversation" not in render_prefix(WRITER, first_turn=False)


def test_the_volatile_part_comes_last_with_the_date_sorted_context_and_memory():
    rendered = render_system_prompt(
        WRITER, today=date(2025, 3, 9), context={"user": "Lea", "channel": "#news"}, memory="  Likes lists.  "
    )

    assert rendered.volatile == (
        "Today is 2025-03-09.\n## Context\n- channel: #news\n- user: Lea\n## Memory\nLikes lists."
    )
    assert rendered.text == f"{rendered.prefix}\n\n{rendered.volatile}"
    assert rendered.text.startswith(rendered.prefix)


def test_the_volatile_part_never_changes_the_prefix_or_its_hash():
    plain = render_system_prompt(WRITER)
    busy = render_system_prompt(WRITER, today=date(2025, 3, 9), context={"user": "Lea"}, memory="Likes lists.")
    next_day = render_system_prompt(WRITER, today=date(2025, 3, 10), context={"user": "Tom"}, memory="")

    assert plain.prefix == busy.prefix == next_day.prefix
    assert plain.prefix_hash == busy.prefix_hash == next_day.prefix_hash
    assert busy.text != next_day.text


def test_without_a_volatile_part_the_text_is_the_prefix():
    rendered = render_system_prompt(WRITER)

    assert rendered.volatile == ""
    assert rendered.text == rendered.prefix


def test_a_long_profile_is_truncated_to_bootstrap_max_chars_with_its_marker():
    snapshot = normalize_snapshot(
        {
            "identity": {"name": "Camille"},
            "sections": [{"key": "long", "title": "Long", "body": "word " * 300}],
            "runtime_policy": {"context": {"bootstrap_max_chars": 500}},
        }
    )
    full = render_prefix({**snapshot, "runtime_policy": {}})

    prefix = render_prefix(snapshot)

    assert len(full) > 500
    assert prefix == full[:500].rstrip() + TRUNCATION_MARK.format(limit=500)
    assert prefix.endswith("\n[… profile truncated to 500 characters by runtime_policy.context.bootstrap_max_chars]")


def test_a_profile_within_bootstrap_max_chars_is_not_truncated():
    snapshot = normalize_snapshot({**WRITER, "runtime_policy": {"context": {"bootstrap_max_chars": 500}}})

    assert len(render_prefix(WRITER)) < 500
    assert render_prefix(snapshot) == render_prefix(WRITER)


def test_a_stored_secret_never_renders(workspace, ada):
    actor = Actor.for_user(ada)
    secret = "sk-live-7f3a9c1e5d2b4a6f8e0c"
    preset = vault_preset(
        workspace, secret=secret, key="gpt", name="GPT", credential_key="openai", model="gpt-4.1-mini", by=actor
    )
    agent_create(workspace=workspace, actor=actor, key="writer", name="Writer", preset=preset, snapshot=WRITER)
    agent = Agent.objects.select_related("live_version").get(key="writer")

    rendered = render_system_prompt(
        agent.live_version.snapshot, first_turn=True, today=date(2025, 3, 9), context={"preset": str(preset)}
    )

    assert "Camille" in rendered.text
    for leaked in (secret, preset.credential.ciphertext):
        assert leaked not in rendered.text
        assert leaked not in canonical_json(agent.live_version.snapshot)


FRENCH_WRITER = normalize_snapshot(
    {
        "identity": {
            "name": "Camille",
            "role": "Rédactrice",
            "persona": "Curieuse.",
            "language": "fr-FR",
            "goals": ["Rédiger"],
        },
        "sections": [{"key": "methode", "title": "Méthode", "body": "D'abord un plan."}],
        "onboarding": "Demande qui lit.",
        "skills": [{"key": "style", "title": "Style maison", "body": "Phrases courtes.", "shared": True}],
    }
)


def test_a_french_agents_prompt_has_no_english_scaffolding():
    rendered = render_system_prompt(FRENCH_WRITER, first_turn=True, today=date(2025, 3, 9), context={"ville": "Lyon"})

    assert rendered.prefix == (
        "Tu es Camille.\nRôle : Rédactrice\nLangue de réponse : fr-FR\nObjectifs :\n- Rédiger\n\n"
        "## Personnalité\nCurieuse.\n\n## Méthode\nD'abord un plan.\n\n"
        "# Compétences\n\n## Style maison\nPhrases courtes.\n\n## Première conversation\nDemande qui lit."
    )
    assert rendered.volatile == "Nous sommes le 2025-03-09.\n## Contexte\n- ville: Lyon"


@pytest.mark.parametrize(
    ("language", "you_are"),
    [
        ("fr", "Tu es {}."),
        ("FR_ca", "Tu es {}."),
        ("français", "Tu es {}."),
        ("en-GB", "You are {}."),
        ("de", "You are {}."),
        ("", "You are {}."),
    ],
)
def test_the_scaffolding_follows_the_primary_language_and_falls_back_to_english(language, you_are):
    assert scaffolding_for(language).you_are == you_are


def test_the_prefix_hash_changes_with_the_words_and_only_with_them():
    english = {**FRENCH_WRITER, "identity": {**FRENCH_WRITER["identity"], "language": "en"}}
    same_words = {**FRENCH_WRITER, "identity": {**FRENCH_WRITER["identity"], "language": "fr-FR"}}

    assert render_system_prompt(same_words).prefix_hash == render_system_prompt(FRENCH_WRITER).prefix_hash
    assert render_system_prompt(english).prefix_hash != render_system_prompt(FRENCH_WRITER).prefix_hash
