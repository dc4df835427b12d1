"""Demo agents for the embedded default: two presets, a shared skill, three agents
with real-looking French G3 profiles. Idempotent: existing rows are left alone."""

from __future__ import annotations

import json

from agents.models import Agent, AgentTestCase, Preset, PromptVersion, Skill
from agents.runtime import agent_turn_run
from agents.services import (
    agent_create,
    agent_test_case_create,
    preset_create,
    prompt_version_propose,
    skill_as_snapshot_entry,
    skill_create,
)
from aihummer.actors import Actor
from aihummer.demo import DemoContext
from aihummer.models import ApiKey

HOUSE_STYLE = {
    "key": "style-maison",
    "title": "Style maison",
    "body": (
        "Écris en français clair, phrases courtes, voix active. Pas de jargon sans définition. "
        "Cite tes sources quand tu affirmes un fait. Termine par une question si une décision reste à prendre."
    ),
}

# The reader the demo workflows start with (workflows.demo), in the profile format of
# `agent_create` (no shared skill: it only summarises).
READER = {
    "key": "lecteur",
    "name": "Lecteur",
    "description": "Lit un texte et en donne un résumé fidèle.",
    "snapshot": {
        "identity": {
            "name": "Léa",
            "role": "Lectrice attentive",
            "persona": "Fidèle au texte, elle distingue ce qui est dit de ce qui est suggéré.",
            "language": "fr",
            "goals": ["Résumer sans trahir"],
        },
        "sections": [{"key": "resume", "title": "Résumé", "body": "Cinq phrases au plus, dans l'ordre du texte."}],
    },
}


DEMO_AGENTS = [
    {
        "key": "redacteur",
        "name": "Rédacteur",
        "description": "Rédige des brouillons d'articles et de notes internes.",
        "identity": {
            "name": "Camille",
            "role": "Rédactrice de l'équipe communication",
            "persona": "Curieuse, précise, attentive au lecteur pressé. Elle préfère un exemple concret à une abstraction.",
            "language": "fr",
            "goals": ["Produire un premier jet publiable", "Respecter le style maison"],
        },
        "sections": [
            (
                "methode",
                "Méthode",
                "Commence par un plan en trois points, puis rédige chaque partie en 150 mots au plus.",
            ),
            ("sources", "Sources", "N'invente jamais de chiffre. Signale [à vérifier] toute donnée sans source."),
            ("format", "Format", "Titre, chapeau de deux phrases, intertitres, conclusion actionnable."),
        ],
        "onboarding": "Présente-toi en une phrase et demande le public visé et la longueur souhaitée.",
    },
    {
        "key": "critique",
        "name": "Critique",
        "description": "Relit un texte et en donne une évaluation argumentée.",
        "identity": {
            "name": "Hugo",
            "role": "Relecteur exigeant",
            "persona": "Direct mais bienveillant. Il justifie chaque remarque et propose toujours une correction.",
            "language": "fr",
            "goals": ["Repérer les erreurs factuelles", "Améliorer la clarté"],
        },
        "sections": [
            (
                "grille",
                "Grille d'évaluation",
                "Note sur 5 : exactitude, clarté, structure, ton. Une phrase par critère.",
            ),
            ("priorites", "Priorités", "Classe tes remarques de la plus grave à la plus légère ; trois au maximum."),
            ("limites", "Limites", "Ne réécris pas tout le texte : propose des corrections ciblées."),
        ],
        "onboarding": "Demande quel type de texte tu relis et pour quel public.",
    },
    {
        "key": "support",
        "name": "Support client",
        # The demo's agent that may propose changes to itself: its proposal waits for bob.
        "allowed_tool_names": ["propose_persona_edit"],
        "description": "Répond aux questions des clients sur le produit.",
        "identity": {
            "name": "Inès",
            "role": "Conseillère support niveau 1",
            "persona": "Patiente, chaleureuse, rassurante. Elle reformule la demande avant de répondre.",
            "language": "fr",
            "goals": ["Résoudre au premier contact", "Escalader ce qui dépasse le niveau 1"],
        },
        "sections": [
            ("accueil", "Accueil", "Salue le client par son nom s'il est connu, reformule sa demande en une phrase."),
            (
                "escalade",
                "Escalade",
                "Remboursements, données personnelles, incidents de sécurité : transmets à un humain.",
            ),
            ("cloture", "Clôture", "Vérifie que la réponse convient et rappelle comment nous recontacter."),
        ],
        "onboarding": "Souhaite la bienvenue et demande le numéro de commande si la question porte sur une commande.",
    },
]


# Saved test cases. `budget` bounds a turn's tokens a little above what the live prompts
# cost on echo (about 250): a proposal that inflates the prompt shows a regression.
BUDGET = {
    "name": "budget",
    "message": "Propose un plan pour un article sur le vélo en ville.",
    "assertions": {"max_tokens": 350},
}

DEMO_CASES = {
    "redacteur": [
        {
            "name": "sujet-respecte",
            "message": "Écris le chapeau d'un article sur le télétravail.",
            "assertions": {"contains": ["télétravail"], "case_insensitive": True, "max_length": 4000},
        },
        {
            "name": "pas-de-jargon-anglais",
            "message": "Résume en trois phrases l'intérêt d'une newsletter interne.",
            "assertions": {"not_contains": ["ASAP", "feedback"], "case_insensitive": True},
        },
        BUDGET,
    ],
    "critique": [
        {
            "name": "grille-complete",
            "message": "Relis ce titre : « Le vélo, c'est la santé ». Note la clarté.",
            "assertions": {"regex": r"(?i)clart[ée]", "min_length": 20},
        },
        BUDGET,
    ],
    "support": [
        {
            "name": "commande",
            "message": "Bonjour, ma commande 4521 n'est pas arrivée.",
            "assertions": {"contains": ["4521"], "not_contains": ["mot de passe"], "case_insensitive": True},
        },
        {
            "name": "remboursement-escalade",
            "message": "Je veux être remboursé tout de suite.",
            "assertions": {"contains": ["rembours"], "case_insensitive": True},
        },
        BUDGET,
    ],
    # The workflows demo's reader (workflows.demo creates it, then its cases).
    "lecteur": [
        {
            "name": "resume-fidele",
            "message": "Le conseil municipal a voté la piétonnisation de la rue Longue pour le printemps.",
            "assertions": {"contains": ["rue Longue"], "case_insensitive": True},
        },
        BUDGET,
    ],
}


REDACTEUR_EXAMPLES = (
    "Bon chapeau : « Le télétravail a gagné deux jours par semaine en trois ans. Ce que cela change pour les "
    "équipes, et ce qui reste à inventer. » Mauvais chapeau : « Dans cet article, nous allons parler du télétravail. » "
    "Bon titre : « Vélo en ville : trois aménagements qui ont fait leurs preuves ». Mauvais titre : « Le vélo ». "
    "Bonne conclusion : une action datée, un responsable, un critère de réussite. Mauvaise conclusion : un résumé "
    "de ce qui précède. Bon intertitre : une phrase qui dit ce que le lecteur apprend. Mauvais intertitre : un mot "
    "isolé. Quand une donnée manque, écris [à vérifier] plutôt que d'inventer un ordre de grandeur, et propose la "
    "source qui permettrait de la confirmer (rapport annuel, étude interne, service concerné)."
)


def demo_snapshot(spec: dict, shared_skill: Skill) -> dict:
    return {
        "identity": spec["identity"],
        "sections": [{"key": k, "title": t, "body": b} for k, t, b in spec["sections"]],
        "onboarding": spec["onboarding"],
        "skills": [skill_as_snapshot_entry(shared_skill)],
        "runtime_policy": {},
        "allowed_tool_names": spec.get("allowed_tool_names", []),
    }


def seed_agents(context: DemoContext) -> None:
    workspace, operator = context.workspace, context.operator
    if not Preset.all_objects.filter(workspace=workspace, key="echo").exists():
        preset_create(
            workspace=workspace,
            actor=operator,
            key="echo",
            name="Echo (hors ligne)",
            provider_name="echo",
            model="echo-1",
            is_active=True,
        )
    if not Preset.all_objects.filter(workspace=workspace, key="gemini-flash").exists():
        preset_create(
            workspace=workspace,
            actor=operator,
            key="gemini-flash",
            name="Gemini 2.5 Flash",
            provider_name="gemini",
            model="gemini-2.5-flash",
            temperature=0.7,
        )
    skill = Skill.objects.filter(workspace=workspace, key=HOUSE_STYLE["key"]).first() or skill_create(
        workspace=workspace, actor=operator, **HOUSE_STYLE
    )
    for spec in DEMO_AGENTS:
        if Agent.all_objects.filter(workspace=workspace, key=spec["key"]).exists():
            continue
        agent_create(
            workspace=workspace,
            actor=operator,
            key=spec["key"],
            name=spec["name"],
            description=spec["description"],
            snapshot=demo_snapshot(spec, skill),
        )
    if not Agent.all_objects.filter(workspace=workspace, key=READER["key"]).exists():
        agent_create(workspace=workspace, actor=operator, **READER)
    context.lines.append(f"  {Agent.objects.filter(workspace=workspace).count()} agents, default preset 'echo'.")


def seed_test_cases(context: DemoContext) -> None:
    """Two or three saved test cases per demo agent, before the proposals, so each
    proposal arrives with its evidence (idempotent: existing cases are left alone)."""
    workspace = context.workspace
    for agent in Agent.objects.filter(workspace=workspace, key__in=DEMO_CASES):
        seed_agent_test_cases(agent, actor=context.operator)
    count = AgentTestCase.objects.filter(agent__workspace=workspace).count()
    context.lines.append(f"  {count} test cases; each proposal runs them on echo (one shows a regression).")


def seed_agent_test_cases(agent: Agent, *, actor: Actor) -> None:
    """`agent`'s demo cases from DEMO_CASES, those it lacks."""
    existing = set(AgentTestCase.objects.filter(agent=agent).values_list("name", flat=True))
    for spec in DEMO_CASES.get(agent.key, []):
        if spec["name"] not in existing:
            agent_test_case_create(agent=agent, actor=actor, **spec)


def seed_proposals(context: DemoContext) -> None:
    """A few pending proposals from different sources, one of them stale, so a
    reviewer has something to look at. Skipped once any proposal exists."""
    workspace = context.workspace
    if PromptVersion.all_objects.filter(workspace=workspace).exclude(number=1).exists():
        return
    agents = {agent.key: agent for agent in Agent.objects.filter(workspace=workspace)}
    alice = Actor.for_user(context.people["alice"])
    admin = Actor.for_user(context.people["admin"])
    api_key = ApiKey.objects.get(workspace=workspace, name="demo-cli")

    # Stale: alice proposes against critique v1, then an admin publishes v3 directly.
    critique_sections = agents["critique"].live_version.snapshot["sections"]
    prompt_version_propose(
        agent=agents["critique"],
        actor=alice,
        reason="Limiter la note à trois critères",
        changes={
            "sections": [
                {**critique_sections[0], "body": "Note sur 5 : exactitude, clarté, ton."},
                *critique_sections[1:],
            ]
        },
    )
    prompt_version_propose(
        agent=agents["critique"],
        actor=admin,
        mode="live",
        reason="Objectif ajouté après la revue trimestrielle",
        changes={"identity": {"goals": ["Repérer les erreurs factuelles", "Améliorer la clarté", "Rester bref"]}},
    )
    redacteur_sections = agents["redacteur"].live_version.snapshot["sections"]
    prompt_version_propose(
        agent=agents["redacteur"],
        actor=alice,
        reason="Les brouillons étaient trop longs : une limite, et des exemples à suivre",
        changes={
            "sections": [
                *redacteur_sections,
                {"key": "longueur", "title": "Longueur", "body": "800 mots au plus, sauf demande contraire."},
                # Long on purpose: this prompt outgrows the `budget` test case, so the
                # demo shows a regression on the review page.
                {"key": "exemples", "title": "Exemples", "body": REDACTEUR_EXAMPLES},
            ]
        },
    )
    prompt_version_propose(
        agent=agents["support"],
        actor=Actor.for_api_key(api_key, surface="api"),
        reason="Synchronisé depuis le guide support v2",
        changes={"onboarding": "Souhaite la bienvenue, présente-toi et demande le numéro de commande ou de ticket."},
    )
    # The support agent proposes its own persona edit during a real (echo) turn, through
    # its self-edit tool: what an agent proposes waits for a reviewer like anyone's.
    edit = {
        "persona": "Patiente et chaleureuse, un ton simple et direct. Elle reformule la demande avant de répondre.",
        "reason": "Les clients trouvent mes réponses trop formelles.",
    }
    agent_turn_run(
        agent=agents["support"],
        actor=alice,
        message="Les clients me trouvent trop formelle.\n@call propose_persona_edit "
        + json.dumps(edit, ensure_ascii=False),
    )
    pending = PromptVersion.objects.filter(workspace=workspace, status=PromptVersion.Status.PENDING).count()
    context.lines.append(f"  {pending} proposals wait for review (one of them stale): log in as bob to decide.")
