"""Squashed migration for databases made from nothing: workflows 0001-0007.
Why and how: aihummer/migrations/0001_squashed_0002.py."""

import aihummer.migration_operations
import django.core.validators
import django.db.models.deletion
import simple_history.models
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [
        ('workflows', '0001_workflows_runs_and_steps'),
        ('workflows', '0002_runs_keep_their_starters_identities'),
        ('workflows', '0003_waiting_status'),
        ('workflows', '0004_step_attempt_log'),
        ('workflows', '0005_desk_french_model_names'),
        ('workflows', '0006_desk_french_field_names'),
        ('workflows', '0007_desk_french_desk_names'),
    ]

    initial = True

    dependencies = [
        ('agents', '0003_prompt_version_diff_stats'),
        ('aihummer', '0010_desk_french_field_names'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        aihummer.migration_operations.CreateAtOnce(
            operations=[migrations.CreateModel(
                name='HistoricalWorkflow',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(blank=True, editable=False, verbose_name='updated at')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('key', models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key')),
                    ('name', models.CharField(max_length=200, verbose_name='name')),
                    ('description', models.TextField(blank=True, verbose_name='description')),
                    ('definition', models.JSONField(help_text='Pivot format v1: version, steps, optional outputs.', verbose_name='definition')),
                    ('version', models.PositiveIntegerField(default=1, editable=False, help_text='Bumped when the definition changes.', verbose_name='version')),
                    ('is_active', models.BooleanField(default=True, verbose_name='enabled')),
                    ('is_builtin', models.BooleanField(default=False, editable=False, verbose_name='is builtin')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'historical workflow',
                    'verbose_name_plural': 'historical workflows',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='Workflow',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('key', models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key')),
                    ('name', models.CharField(max_length=200, verbose_name='name')),
                    ('description', models.TextField(blank=True, verbose_name='description')),
                    ('definition', models.JSONField(help_text='Pivot format v1: version, steps, optional outputs.', verbose_name='definition')),
                    ('version', models.PositiveIntegerField(default=1, editable=False, help_text='Bumped when the definition changes.', verbose_name='version')),
                    ('is_active', models.BooleanField(default=True, verbose_name='enabled')),
                    ('is_builtin', models.BooleanField(default=False, editable=False, verbose_name='is builtin')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='workflows', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'ordering': ['workspace__slug', 'key'],
                    'verbose_name': 'workflow',
                    'verbose_name_plural': 'workflows',
                    'constraints': [models.UniqueConstraint(fields=('workspace', 'key'), name='workflows_workflow_unique_key'), models.CheckConstraint(condition=models.Q(('version__gte', 1)), name='workflows_workflow_version_positive')],
                },
            ), migrations.CreateModel(
                name='WorkflowRun',
                fields=[
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False, verbose_name='id')),
                    ('workflow_key', models.CharField(max_length=100, verbose_name='workflow key')),
                    ('workflow_version', models.PositiveIntegerField(verbose_name='workflow version')),
                    ('definition', models.JSONField(verbose_name='definition')),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('waiting', 'Waiting for a person'), ('completed', 'Completed'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='pending', max_length=20, verbose_name='status')),
                    ('inputs', models.JSONField(blank=True, default=dict, verbose_name='inputs')),
                    ('context', models.JSONField(blank=True, default=dict, verbose_name='context')),
                    ('outputs', models.JSONField(blank=True, default=dict, verbose_name='outputs')),
                    ('answer', models.TextField(blank=True, verbose_name='answer')),
                    ('error', models.TextField(blank=True, verbose_name='error')),
                    ('actor_source', models.CharField(help_text='Who started it, through what: admin:alice, cli:ops…', max_length=200, verbose_name='actor source')),
                    ('surface', models.CharField(max_length=20, verbose_name='surface')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('started_at', models.DateTimeField(blank=True, null=True, verbose_name='started at')),
                    ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                    ('deadline_at', models.DateTimeField(blank=True, help_text="The run's wall-clock limit.", null=True, verbose_name='deadline at')),
                    ('input_tokens', models.PositiveIntegerField(default=0, verbose_name='input tokens')),
                    ('output_tokens', models.PositiveIntegerField(default=0, verbose_name='output tokens')),
                    ('cost_usd', models.DecimalField(decimal_places=6, default=0, max_digits=12, verbose_name='cost usd')),
                    ('actor_identity', models.CharField(blank=True, max_length=120, verbose_name='actor identity')),
                    ('started_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='started by')),
                    ('workflow', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='workflows.workflow', verbose_name='workflow')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='workflow_runs', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'ordering': ['-created_at'],
                    'verbose_name': 'workflow run',
                    'verbose_name_plural': 'workflow runs',
                    'indexes': [models.Index(fields=['workspace', '-created_at'], name='workflows_run_ws_created')],
                    'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'running', 'waiting', 'completed', 'failed', 'cancelled'])), name='workflows_workflowrun_status_valid')],
                },
            ), migrations.CreateModel(
                name='StepRun',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, verbose_name='name')),
                    ('position', models.PositiveIntegerField(verbose_name='position')),
                    ('agent_key', models.CharField(max_length=50, verbose_name='agent key')),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('waiting', 'Waiting for a person'), ('completed', 'Completed'), ('failed', 'Failed'), ('cancelled', 'Cancelled'), ('skipped', 'Skipped')], default='pending', max_length=20, verbose_name='status')),
                    ('input', models.TextField(blank=True, verbose_name='input')),
                    ('output', models.JSONField(blank=True, null=True, verbose_name='output')),
                    ('error', models.TextField(blank=True, verbose_name='error')),
                    ('attempts', models.PositiveIntegerField(default=0, verbose_name='attempts')),
                    ('lease_expires_at', models.DateTimeField(blank=True, null=True, verbose_name='lease expires at')),
                    ('retry_at', models.DateTimeField(blank=True, help_text='A pending retry is not sent before this.', null=True, verbose_name='retry at')),
                    ('started_at', models.DateTimeField(blank=True, null=True, verbose_name='started at')),
                    ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                    ('input_tokens', models.PositiveIntegerField(default=0, verbose_name='input tokens')),
                    ('output_tokens', models.PositiveIntegerField(default=0, verbose_name='output tokens')),
                    ('cost_usd', models.DecimalField(decimal_places=6, default=0, max_digits=12, verbose_name='cost usd')),
                    ('agent_version', models.PositiveIntegerField(blank=True, null=True, verbose_name='agent version')),
                    ('prefix_hash', models.CharField(blank=True, max_length=64, verbose_name='prefix hash')),
                    ('attempt_log', models.JSONField(blank=True, default=list, help_text='Earlier attempts: start, end, error, turn.', verbose_name='attempt log')),
                    ('agent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='step_runs', to='agents.agent', verbose_name='agent')),
                    ('turn', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='step_runs', to='agents.agentturn', verbose_name='turn')),
                    ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='steps', to='workflows.workflowrun', verbose_name='run')),
                ],
                options={
                    'ordering': ['run', 'position'],
                    'verbose_name': 'step run',
                    'verbose_name_plural': 'step runs',
                    'indexes': [models.Index(condition=models.Q(('status', 'running')), fields=['lease_expires_at'], name='workflows_step_lease')],
                    'constraints': [models.UniqueConstraint(fields=('run', 'name'), name='workflows_steprun_unique_step'), models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'skipped'])), name='workflows_steprun_status_valid')],
                },
            )],
        ),
    ]
