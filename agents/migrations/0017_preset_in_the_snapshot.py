"""The preset an agent runs with becomes part of its versions (issue 33).

Every version's snapshot gains `preset`: the key of the preset its agent is bound to
now, or null for the workspace's default. Before this release a change of preset was
not versioned, so the binding at migration time is the only one the record can name;
diffs between older versions show no preset change, which is what was recorded. The
content hash is recomputed with the key.

Backwards the key is dropped again and the hashes restored.
"""

import hashlib
import json

from django.db import migrations, models


def _content_hash(snapshot: dict) -> str:
    # agents.snapshot.content_hash, as it is defined when this migration ships.
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _rewrite(apps, change) -> None:
    PromptVersion = apps.get_model("agents", "PromptVersion")
    versions = PromptVersion.objects.select_related("agent__preset").only("snapshot", "agent__preset__key")
    for version in versions.iterator():
        snapshot = change(dict(version.snapshot), version.agent.preset)
        # update(), not save(): no history row, no updated_at change.
        PromptVersion.objects.filter(pk=version.pk).update(snapshot=snapshot, content_hash=_content_hash(snapshot))


def _with_preset(snapshot: dict, preset) -> dict:
    snapshot.setdefault("preset", preset.key if preset is not None else None)
    return snapshot


def _without_preset(snapshot: dict, preset) -> dict:
    snapshot.pop("preset", None)
    return snapshot


def forward(apps, schema_editor):
    _rewrite(apps, _with_preset)


def backward(apps, schema_editor):
    _rewrite(apps, _without_preset)


class Migration(migrations.Migration):
    dependencies = [("agents", "0016_desk_french_names")]

    operations = [
        migrations.RunPython(forward, backward, elidable=True),
        *(
            migrations.AlterField(
                model_name=model_name,
                name="preset",
                field=models.ForeignKey(
                    blank=True,
                    null=True,
                    on_delete=models.deletion.PROTECT if model_name == "agent" else models.deletion.DO_NOTHING,
                    related_name="agents" if model_name == "agent" else "+",
                    to="agents.preset",
                    help_text="The live version's preset (its snapshot's `preset`), written when a version goes "
                    "live; empty: the workspace's default preset at run time.",
                    **({} if model_name == "agent" else {"db_constraint": False}),
                ),
            )
            for model_name in ("agent", "historicalagent")
        ),
        migrations.AlterField(
            model_name="conversation",
            name="peer",
            field=models.CharField(
                help_text="The verified peer: `user:<id>` (a person, or a key's owner), `api_key:<id>`, or "
                "`api_key:<id>/<peer>` (a person that key vouches for, with its vouch scope).",
                max_length=100,
            ),
        ),
    ]
