"""Demo workflows: the seed's two-step pipeline (a reader, then a critic reading its
answer) and a fan-in (two parallel steps, then one that reads both). Idempotent."""

from __future__ import annotations

from agents.demo import READER
from agents.models import Agent
from aihummer.demo import DemoContext
from workflows.models import Workflow
from workflows.services import workflow_create

PIPELINE = {
    "version": 1,
    "description": "Lecture d'un texte puis critique de son résumé : le pipeline de démonstration en deux étapes.",
    "steps": [
        {"name": "lecture", "agent_name": "lecteur", "input_mapping": {}, "output_key": "resume"},
        {
            "name": "critique",
            "agent_name": "critique",
            "input_mapping": {"text": "$.steps.lecture.output.answer"},
            "output_key": "evaluation",
        },
    ],
    "outputs": {"final": "$.steps.critique.output.answer"},
}

FAN_IN = {
    "version": 1,
    "description": "Un résumé et un brouillon en parallèle, puis une critique qui lit les deux.",
    "steps": [
        {"name": "resume", "agent_name": "lecteur", "depends_on": []},
        {"name": "brouillon", "agent_name": "redacteur", "depends_on": []},
        {
            "name": "critique",
            "agent_name": "critique",
            "depends_on": ["resume", "brouillon"],
            "input_mapping": {"Résumé": "$.steps.resume.output.answer", "Brouillon": "$.steps.brouillon.output.text"},
            "output_key": "evaluation",
        },
    ],
}

DEMO_WORKFLOWS = [
    ("lecture-critique", "Lecture puis critique", PIPELINE),
    ("resume-et-brouillon", "Résumé et brouillon, puis critique", FAN_IN),
]


def seed_workflows(context: DemoContext) -> None:
    workspace, operator = context.workspace, context.operator
    # The workflows' first step reads with the demo's `lecteur` (seeded with the agents).
    if not Agent.objects.filter(workspace=workspace, key=READER["key"]).exists():
        raise LookupError(f"The demo agent '{READER['key']}' is missing: the agents' seeder runs first.")
    for key, name, definition in DEMO_WORKFLOWS:
        if Workflow.all_objects.filter(workspace=workspace, key=key).exists():
            continue
        workflow_create(
            workspace=workspace,
            actor=operator,
            key=key,
            name=name,
            description=definition["description"],
            definition=definition,
        )
    context.lines.append(
        f"  {len(DEMO_WORKFLOWS)} workflows: try `manage.py run_workflow {workspace.slug} lecture-critique "
        '--message "Un texte à lire"`.'
    )
