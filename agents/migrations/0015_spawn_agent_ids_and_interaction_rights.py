"""Stored runtime policies with the document's interaction rights (issue 29).

`children.allowed_agents`, a name of ours, becomes `interaction.spawn_agent_ids` (its
empty list, which meant any agent, becomes null), and the interaction block gets the
document's fields with their defaults. Rewritten as 0007 did: every agent's policy (the
live projection) and the snapshot of every live and every pending version, whose
content hash is recomputed with it. Untouched: the other versions and every history
row — an old version is upgraded when it is read (`agents.policy.upgrade_stored_policy`).
The rewrite is the frozen step `agents.policy_upgrades.from_allowed_agents`.

Backwards this does nothing: the earlier code cannot read the new names. Going back
means restoring a backup, not migrating down.
"""

import hashlib
import json

from django.db import migrations

from agents.policy_upgrades import from_allowed_agents, names_allowed_agents


def _content_hash(snapshot: dict) -> str:
    # agents.snapshot.content_hash, as it is defined when this migration ships.
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def forward(apps, schema_editor):
    Agent = apps.get_model("agents", "Agent")
    PromptVersion = apps.get_model("agents", "PromptVersion")
    for agent in Agent.objects.only("runtime_policy").iterator():
        if names_allowed_agents(agent.runtime_policy):
            # update(), not save(): no history row, no updated_at change.
            Agent.objects.filter(pk=agent.pk).update(runtime_policy=from_allowed_agents(agent.runtime_policy))
    live_ids = Agent.objects.exclude(live_version=None).values("live_version_id")
    current = PromptVersion.objects.filter(status="pending") | PromptVersion.objects.filter(pk__in=live_ids)
    for version in current.only("snapshot").iterator():
        policy = version.snapshot.get("runtime_policy")
        if names_allowed_agents(policy):
            snapshot = {**version.snapshot, "runtime_policy": from_allowed_agents(policy)}
            PromptVersion.objects.filter(pk=version.pk).update(snapshot=snapshot, content_hash=_content_hash(snapshot))


class Migration(migrations.Migration):
    dependencies = [("agents", "0014_approval_requests")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop, elidable=True)]
