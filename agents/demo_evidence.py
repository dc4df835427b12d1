"""Demo test cases: two or three per demo agent, seeded before the demo proposals so
each proposal arrives with its evidence. The `budget` cases bound a turn's tokens a
little above what the live prompts cost on echo (about 250): a proposal that inflates
the prompt shows a regression."""

from __future__ import annotations

from agents.evidence_services import agent_test_case_create
from agents.models import Agent, AgentTestCase
from aihummer.actors import Actor

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
}


def seed_test_cases(workspace: object, operator: Actor) -> int:
    """Create the demo cases that are missing (idempotent); returns how many exist."""
    for agent in Agent.objects.filter(workspace=workspace, key__in=DEMO_CASES):
        existing = set(AgentTestCase.objects.filter(agent=agent).values_list("name", flat=True))
        for spec in DEMO_CASES[agent.key]:
            if spec["name"] not in existing:
                agent_test_case_create(agent=agent, actor=operator, **spec)
    return AgentTestCase.objects.filter(agent__workspace=workspace).count()
