"""Child turns recorded before 0019 get the root of their execution tree, so the turn
page can draw the trees they belong to. Depth by depth: a child's root is its parent's
root, or its parent when the parent is a root."""

from django.db import migrations
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce

# Deeper than any policy allows (children.max_depth ≤ 4), for rows of older limits.
DEEPEST = 16


def name_the_roots(apps, schema_editor):
    AgentTurn = apps.get_model("agents", "AgentTurn")
    parent_root = AgentTurn.objects.filter(pk=OuterRef("parent_id")).values_list(Coalesce("root_id", "pk"))[:1]
    for depth in range(1, DEEPEST + 1):
        AgentTurn.objects.filter(depth=depth, parent__isnull=False, root__isnull=True).update(
            root_id=Subquery(parent_root)
        )


class Migration(migrations.Migration):
    dependencies = [("agents", "0021_conversation_handoff")]

    operations = [migrations.RunPython(name_the_roots, migrations.RunPython.noop, elidable=True)]
