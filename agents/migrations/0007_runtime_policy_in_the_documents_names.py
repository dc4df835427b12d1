"""Stored runtime policies in the product document's names (issue 28).

Rewritten: every agent's policy (the live projection) and the snapshot of every live
and every pending version, whose content hash is recomputed with it. Untouched: the
other versions (approved then replaced, rejected, withdrawn) and every history row —
history is never rewritten; an old version is upgraded when it is read
(`agents.policy.upgrade_stored_policy`). The rewrite is the frozen step
`agents.policy_upgrades.from_first_release`.

Backwards this does nothing: the document's names stay, which the first release cannot
read. Going back to it means restoring a backup, not migrating down.
"""

import hashlib
import json

from django.db import migrations, models

from agents.policy_upgrades import from_first_release, is_first_release


def _content_hash(snapshot: dict) -> str:
    # agents.snapshot.content_hash, as it is defined when this migration ships.
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def forward(apps, schema_editor):
    Agent = apps.get_model("agents", "Agent")
    PromptVersion = apps.get_model("agents", "PromptVersion")
    for agent in Agent.objects.only("runtime_policy").iterator():
        if is_first_release(agent.runtime_policy):
            # update(), not save(): no history row, no updated_at change.
            Agent.objects.filter(pk=agent.pk).update(runtime_policy=from_first_release(agent.runtime_policy))
    live_ids = Agent.objects.exclude(live_version=None).values("live_version_id")
    current = PromptVersion.objects.filter(status="pending") | PromptVersion.objects.filter(pk__in=live_ids)
    for version in current.only("snapshot").iterator():
        policy = version.snapshot.get("runtime_policy")
        if is_first_release(policy):
            snapshot = {**version.snapshot, "runtime_policy": from_first_release(policy)}
            PromptVersion.objects.filter(pk=version.pk).update(snapshot=snapshot, content_hash=_content_hash(snapshot))


class Migration(migrations.Migration):
    dependencies = [("agents", "0006_versions_belong_to_their_agent")]

    operations = [
        migrations.RunPython(forward, migrations.RunPython.noop, elidable=True),
        *(
            migrations.AlterField(
                model_name=model_name,
                name="runtime_policy",
                field=models.JSONField(
                    blank=True,
                    default=dict,
                    editable=False,
                    help_text="The live version's runtime policy, in the product document's names (agents.policy).",
                ),
            )
            for model_name in ("agent", "historicalagent")
        ),
    ]
