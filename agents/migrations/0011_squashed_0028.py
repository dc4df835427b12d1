"""Squashed migration for databases made from nothing: agents 0011-0028.
Why and how: aihummer/migrations/0001_squashed_0002.py."""

import agents.destinations
import agents.models.approvals
import aihummer.migration_operations
import django.core.validators
import django.db.models.deletion
import django.db.models.expressions
import django.utils.timezone
import simple_history.models
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [
        ('agents', '0011_conversations'),
        ('agents', '0012_approval_policy_and_decisions'),
        ('agents', '0013_conversation_notes'),
        ('agents', '0014_approval_requests'),
        ('agents', '0015_spawn_agent_ids_and_interaction_rights'),
        ('agents', '0016_desk_french_names'),
        ('agents', '0017_preset_in_the_snapshot'),
        ('agents', '0018_desk_french_model_names'),
        ('agents', '0019_turn_tree_root_and_running'),
        ('agents', '0020_desk_french_field_names'),
        ('agents', '0021_conversation_handoff'),
        ('agents', '0022_turn_tree_roots_of_earlier_turns'),
        ('agents', '0023_desk_french_action_requests'),
        ('agents', '0024_tree_places_that_lapse'),
        ('agents', '0025_approval_outcome_unknown'),
        ('agents', '0026_desk_french_desk_names'),
        ('agents', '0027_approval_resume_attempts'),
        ('agents', '0028_desk_french_tool_settings'),
    ]

    dependencies = [
        ('agents', '0010_turn_error_kind'),
        ('aihummer', '0011_desk_french_desk_names'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        aihummer.migration_operations.CreateAtOnce(
            operations=[migrations.CreateModel(
                name='AgentToolSettings',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('extra_approval_tools', models.JSONField(blank=True, default=list, help_text="Tools this agent adds to the workspace's approval list.", verbose_name='extra approval tools')),
                    ('on_reject', models.CharField(choices=[('continue', 'Tell the model and go on'), ('end', 'End the turn')], default='continue', max_length=10, verbose_name='on reject')),
                    ('smtp_host', models.CharField(blank=True, max_length=255, verbose_name='SMTP host')),
                    ('smtp_port', models.PositiveIntegerField(default=587, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(65535)], verbose_name='SMTP port')),
                    ('smtp_security', models.CharField(choices=[('none', 'None (plain)'), ('starttls', 'STARTTLS'), ('ssl', 'SSL/TLS')], default='starttls', max_length=10, verbose_name='SMTP security')),
                    ('smtp_user', models.CharField(blank=True, max_length=255, verbose_name='SMTP user')),
                    ('mail_from', models.EmailField(blank=True, help_text='The From address of mail_send.', max_length=254, verbose_name='mail from')),
                    ('http_allowed_hosts', models.JSONField(blank=True, default=list, help_text='Hosts http_request may call (api.example.com, *.example.com); empty: none.', validators=[agents.destinations.validate_host_patterns], verbose_name='HTTP allowed hosts')),
                    ('http_timeout_seconds', models.PositiveIntegerField(default=10, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(60)], verbose_name='HTTP timeout seconds')),
                    ('http_max_response_bytes', models.PositiveIntegerField(default=100000, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1000000)], verbose_name='HTTP max response bytes')),
                    ('agent', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='tool_settings', to='agents.agent', verbose_name='agent')),
                    ('smtp_password', models.ForeignKey(blank=True, help_text='The vault credential holding the SMTP password (never shown).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='agents.credential', verbose_name='SMTP password credential')),
                ],
                options={
                    'verbose_name_plural': 'agent tool settings',
                    'verbose_name': 'agent tool settings',
                    'constraints': [models.CheckConstraint(condition=models.Q(('smtp_security__in', ['none', 'starttls', 'ssl'])), name='agents_agenttoolsettings_smtp_security_valid'), models.CheckConstraint(condition=models.Q(('on_reject__in', ['continue', 'end'])), name='agents_agenttoolsettings_on_reject_valid')],
                },
            ), migrations.CreateModel(
                name='ApprovalPolicy',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('wording_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='wording approvals')),
                    ('wording_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='wording consensus')),
                    ('wording_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='wording wait minutes')),
                    ('identity_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='identity approvals')),
                    ('identity_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='identity consensus')),
                    ('identity_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='identity wait minutes')),
                    ('power_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='power approvals')),
                    ('power_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='power consensus')),
                    ('power_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='power wait minutes')),
                    ('workspace', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='approval_policy', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'approval policy',
                    'verbose_name_plural': 'approval policies',
                    'constraints': [models.CheckConstraint(condition=models.Q(('wording_approvals__gte', 1), ('wording_approvals__lte', 3), ('identity_approvals__gte', 1), ('identity_approvals__lte', 3), ('power_approvals__gte', 1), ('power_approvals__lte', 3)), name='agents_approvalpolicy_approvals_range'), models.CheckConstraint(condition=models.Q(('wording_wait_minutes__lte', 43200), ('identity_wait_minutes__lte', 43200), ('power_wait_minutes__lte', 43200)), name='agents_approvalpolicy_wait_range')],
                },
            ), migrations.CreateModel(
                name='ApprovalRequest',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('agent_key', models.CharField(max_length=50, verbose_name='agent')),
                    ('origin', models.CharField(choices=[('turn', 'Agent turn'), ('workflow_step', 'Workflow step')], default='turn', max_length=20)),
                    ('run_id', models.UUIDField(blank=True, null=True)),
                    ('step_name', models.CharField(blank=True, max_length=100)),
                    ('tool_name', models.CharField(max_length=50, verbose_name='tool')),
                    ('call_id', models.CharField(max_length=200)),
                    ('arguments', models.JSONField(help_text='Exactly what will run when approved.')),
                    ('arguments_hash', models.CharField(max_length=64)),
                    ('ledger_key', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('expired', 'Expired')], default='pending', max_length=10, verbose_name='status')),
                    ('proposer_identity', models.CharField(max_length=120)),
                    ('actor_source', models.CharField(max_length=200, verbose_name='on behalf of')),
                    ('reviewed_at', models.DateTimeField(blank=True, null=True)),
                    ('review_note', models.TextField(blank=True)),
                    ('expires_at', models.DateTimeField()),
                    ('progress', models.CharField(blank=True, choices=[('', 'Not started'), ('effect', 'Carrying out'), ('sending', 'Sending (the receiver may be acting on it)'), ('unknown', 'Outcome unknown: a person decides'), ('recorded', 'Effect recorded'), ('resuming', 'Turn resuming'), ('resumed', 'Turn resumed')], default='', max_length=10, verbose_name='progress')),
                    ('progress_until', models.DateTimeField(blank=True, help_text='The lease of the worker at it.', null=True)),
                    ('effect_attempts', models.PositiveIntegerField(default=0)),
                    ('result', models.TextField(blank=True, help_text="What the model is told: the effect's result or the refusal.")),
                    ('effect_ok', models.BooleanField(blank=True, null=True)),
                    ('executed_at', models.DateTimeField(blank=True, null=True)),
                    ('resume_state', models.JSONField(blank=True, default=dict, editable=False)),
                    ('effect_started_at', models.DateTimeField(blank=True, help_text='When the last attempt began the network write (the `sending` mark).', null=True)),
                    ('resolution', models.CharField(blank=True, choices=[('', '—'), ('resent', 'Sent again'), ('confirmed', 'Confirmed as done')], default='', max_length=10, verbose_name='resolution')),
                    ('resolved_at', models.DateTimeField(blank=True, null=True)),
                    ('resume_attempts', models.PositiveIntegerField(default=0, help_text='How many times its turn was resumed.')),
                    ('agent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='approval_requests', to='agents.agent')),
                    ('resolved_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('reviewed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('started_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('turn', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='approval_requests', to='agents.agentturn')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approval_requests', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'ordering': ['-created_at'],
                    'verbose_name': 'approval request',
                    'verbose_name_plural': 'approval requests',
                    'indexes': [models.Index(fields=['workspace', 'status', '-created_at'], name='agents_apreq_ws_status'), models.Index(condition=models.Q(('status', 'pending')), fields=['expires_at'], name='agents_apreq_expiry')],
                    'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'approved', 'rejected', 'expired'])), name='agents_approvalrequest_status_valid'), models.CheckConstraint(condition=models.Q(models.Q(('status', 'pending'), _negated=True), ('progress', ''), _connector='OR'), name='agents_approvalrequest_pending_not_started'), models.UniqueConstraint(condition=models.Q(('status', 'pending')), fields=('turn',), name='agents_approvalrequest_one_pending_per_turn'), models.CheckConstraint(condition=models.Q(('progress__in', ['', 'effect', 'sending', 'unknown', 'recorded', 'resuming', 'resumed'])), name='agents_approvalrequest_progress_valid'), models.CheckConstraint(condition=models.Q(models.Q(('progress__in', ['sending', 'unknown']), _negated=True), ('status', 'approved'), _connector='OR'), name='agents_approvalrequest_sending_approved'), models.CheckConstraint(condition=models.Q(('resolution__in', ['', 'resent', 'confirmed'])), name='agents_approvalrequest_resolution_valid')],
                },
            ), migrations.CreateModel(
                name='Conversation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('peer', models.CharField(help_text="The verified peer: `user:<id>` (a person, or a key's owner), `api_key:<id>`, or `api_key:<id>/<peer>` (a person that key vouches for, with its vouch scope).", max_length=100, verbose_name='peer')),
                    ('channel', models.CharField(blank=True, help_text="api, mcp, admin or the client's name for it; blank: every channel.", max_length=50, verbose_name='channel')),
                    ('message_count', models.PositiveIntegerField(default=0, verbose_name='message count')),
                    ('context_start', models.PositiveIntegerField(default=1, help_text='Sequence of the first message of the current context (after an idle reset).', verbose_name='context start')),
                    ('last_message_at', models.DateTimeField(blank=True, null=True, verbose_name='last message at')),
                    ('compacted_through', models.PositiveIntegerField(default=0, help_text="Sequence of the last message folded into the conversation's summary (an explicit runtime_policy.context compacts older messages); requests carry the messages after it.", verbose_name='compacted through')),
                    ('inherited_policy', models.JSONField(blank=True, help_text="The runtime policy of the turn that handed the conversation off, copied by value: the answering agent's turns run under it (null: no hand-off).", null=True, verbose_name='inherited policy')),
                    ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='conversations', to='agents.agent', verbose_name='agent')),
                    ('answering_agent', models.ForeignKey(blank=True, help_text='The agent the conversation was handed to, which answers from then on; null: `agent`.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.agent', verbose_name='answering agent')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='conversations', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'ordering': ['-pk'],
                    'verbose_name': 'conversation',
                    'verbose_name_plural': 'conversations',
                    'constraints': [models.UniqueConstraint(fields=('agent', 'peer', 'channel'), name='agents_conversation_unique_peer_channel'), models.CheckConstraint(condition=models.Q(('peer__regex', '^(user|api_key|operator|run):[^\\s]{1,80}$')), name='agents_conversation_peer_valid'), models.CheckConstraint(condition=models.Q(('channel__regex', '^([a-z0-9_-]{1,50})?$')), name='agents_conversation_channel_valid'), models.CheckConstraint(condition=models.Q(('context_start__gte', 1), ('context_start__lte', django.db.models.expressions.CombinedExpression(models.F('message_count'), '+', models.Value(1)))), name='agents_conversation_context_within_messages'), models.CheckConstraint(condition=models.Q(('compacted_through__lte', models.F('message_count'))), name='agents_conversation_compacted_within_messages')],
                },
            ), migrations.CreateModel(
                name='ConversationMessage',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('sequence', models.PositiveIntegerField()),
                    ('role', models.CharField(choices=[('user', 'User'), ('assistant', 'Assistant')], max_length=20)),
                    ('channel', models.CharField(help_text='The channel the message came through.', max_length=50)),
                    ('text', models.TextField()),
                    ('version_number', models.PositiveIntegerField(blank=True, help_text='The prompt version the turn ran (assistant messages).', null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('agent_key', models.CharField(blank=True, help_text="The agent that answered (assistant messages): the conversation's, or the one it was handed to.", max_length=50)),
                    ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='agents.conversation')),
                    ('turn', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.agentturn')),
                ],
                options={
                    'ordering': ['conversation', 'sequence'],
                    'verbose_name': 'conversation message',
                    'verbose_name_plural': 'conversation messages',
                    'constraints': [models.UniqueConstraint(fields=('conversation', 'sequence'), name='agents_conversationmessage_unique_sequence'), models.CheckConstraint(condition=models.Q(('sequence__gte', 1)), name='agents_conversationmessage_sequence_valid'), models.CheckConstraint(condition=models.Q(('role__in', ['user', 'assistant'])), name='agents_conversationmessage_role_valid'), models.CheckConstraint(condition=models.Q(('role', 'user'), ('version_number__isnull', False), _connector='OR'), name='agents_conversationmessage_answer_has_version')],
                },
            ), migrations.CreateModel(
                name='ConversationNote',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('is_sandbox', models.BooleanField(db_index=True, default=False, editable=False)),
                    ('kind', models.CharField(choices=[('summary', 'Summary'), ('memory', 'Memory note')], max_length=20)),
                    ('first_sequence', models.PositiveIntegerField()),
                    ('last_sequence', models.PositiveIntegerField()),
                    ('text', models.TextField()),
                    ('provider_name', models.CharField(blank=True, max_length=50)),
                    ('model', models.CharField(blank=True, max_length=200)),
                    ('input_tokens', models.PositiveIntegerField(default=0)),
                    ('output_tokens', models.PositiveIntegerField(default=0)),
                    ('cost_usd', models.DecimalField(decimal_places=6, default=0, max_digits=12)),
                    ('latency_ms', models.PositiveIntegerField(default=0)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='notes', to='agents.conversation')),
                ],
                options={
                    'ordering': ['conversation', 'pk'],
                    'verbose_name': 'conversation note',
                    'verbose_name_plural': 'conversation notes',
                    'indexes': [models.Index(fields=['conversation', 'kind', '-last_sequence'], name='agents_note_latest')],
                    'constraints': [models.CheckConstraint(condition=models.Q(('kind__in', ['summary', 'memory'])), name='agents_conversationnote_kind_valid'), models.CheckConstraint(condition=models.Q(('first_sequence__gte', 1), ('first_sequence__lte', models.F('last_sequence'))), name='agents_conversationnote_sequences_valid')],
                },
            ), migrations.CreateModel(
                name='HistoricalAgentToolSettings',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(blank=True, editable=False, verbose_name='updated at')),
                    ('extra_approval_tools', models.JSONField(blank=True, default=list, help_text="Tools this agent adds to the workspace's approval list.", verbose_name='extra approval tools')),
                    ('on_reject', models.CharField(choices=[('continue', 'Tell the model and go on'), ('end', 'End the turn')], default='continue', max_length=10, verbose_name='on reject')),
                    ('smtp_host', models.CharField(blank=True, max_length=255, verbose_name='SMTP host')),
                    ('smtp_port', models.PositiveIntegerField(default=587, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(65535)], verbose_name='SMTP port')),
                    ('smtp_security', models.CharField(choices=[('none', 'None (plain)'), ('starttls', 'STARTTLS'), ('ssl', 'SSL/TLS')], default='starttls', max_length=10, verbose_name='SMTP security')),
                    ('smtp_user', models.CharField(blank=True, max_length=255, verbose_name='SMTP user')),
                    ('mail_from', models.EmailField(blank=True, help_text='The From address of mail_send.', max_length=254, verbose_name='mail from')),
                    ('http_allowed_hosts', models.JSONField(blank=True, default=list, help_text='Hosts http_request may call (api.example.com, *.example.com); empty: none.', validators=[agents.destinations.validate_host_patterns], verbose_name='HTTP allowed hosts')),
                    ('http_timeout_seconds', models.PositiveIntegerField(default=10, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(60)], verbose_name='HTTP timeout seconds')),
                    ('http_max_response_bytes', models.PositiveIntegerField(default=100000, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1000000)], verbose_name='HTTP max response bytes')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('agent', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.agent', verbose_name='agent')),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('smtp_password', models.ForeignKey(blank=True, db_constraint=False, help_text='The vault credential holding the SMTP password (never shown).', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.credential', verbose_name='SMTP password credential')),
                ],
                options={
                    'verbose_name': 'historical agent tool settings',
                    'verbose_name_plural': 'historical agent tool settings',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='HistoricalApprovalPolicy',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(blank=True, editable=False, verbose_name='updated at')),
                    ('wording_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='wording approvals')),
                    ('wording_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='wording consensus')),
                    ('wording_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='wording wait minutes')),
                    ('identity_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='identity approvals')),
                    ('identity_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='identity consensus')),
                    ('identity_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='identity wait minutes')),
                    ('power_approvals', models.PositiveSmallIntegerField(default=1, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3)], verbose_name='power approvals')),
                    ('power_consensus', models.BooleanField(default=True, help_text='One rejection rejects the proposal.', verbose_name='power consensus')),
                    ('power_wait_minutes', models.PositiveIntegerField(default=0, help_text='Least minutes from proposal to live.', validators=[django.core.validators.MaxValueValidator(43200)], verbose_name='power wait minutes')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'historical approval policy',
                    'verbose_name_plural': 'historical approval policies',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='HistoricalWorkspaceToolPolicy',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(blank=True, editable=False, verbose_name='updated at')),
                    ('approval_tools', models.JSONField(blank=True, default=agents.models.approvals.default_approval_tools, help_text="Tools whose every call waits for a person's approval (mail_send, http_request by default).", verbose_name='approval tools')),
                    ('allow_private_addresses', models.BooleanField(default=False, help_text='Let http_request reach loopback and private addresses (tests, on-premises services).', verbose_name='allow private addresses')),
                    ('approval_expiry_hours', models.PositiveIntegerField(default=72, help_text='A request nobody decided within this many hours is refused.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(720)], verbose_name='approval expiry hours')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'historical workspace tool policy',
                    'verbose_name_plural': 'historical workspace tool policies',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='TreePlace',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('process', models.CharField(help_text='The process holding the place (host:pid).', max_length=100, verbose_name='process')),
                    ('lease_until', models.DateTimeField(help_text='The place stops counting after this unless its process renews it.', verbose_name='lease until')),
                    ('root', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tree_places', to='agents.agentturn', verbose_name='root turn')),
                ],
                options={
                    'verbose_name': 'execution tree place',
                    'verbose_name_plural': 'execution tree places',
                },
            ), migrations.CreateModel(
                name='VersionDecision',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kind', models.CharField(choices=[('approve', 'Approved'), ('reject', 'Rejected')], max_length=10)),
                    ('seen_live_number', models.PositiveIntegerField(blank=True, help_text='The live version the reviewer looked at (None: none was live yet).', null=True)),
                    ('note', models.TextField(blank=True)),
                    ('live_at', models.DateTimeField(blank=True, help_text='When the approver asked it to go live.', null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('reviewer', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='agents.promptversion')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='aihummer.workspace')),
                ],
                options={
                    'ordering': ['version', 'created_at', 'id'],
                    'constraints': [models.UniqueConstraint(fields=('version', 'reviewer'), name='agents_versiondecision_one_per_reviewer'), models.CheckConstraint(condition=models.Q(('kind__in', ['approve', 'reject'])), name='agents_versiondecision_kind_valid')],
                },
            ), migrations.CreateModel(
                name='WorkspaceToolPolicy',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('approval_tools', models.JSONField(blank=True, default=agents.models.approvals.default_approval_tools, help_text="Tools whose every call waits for a person's approval (mail_send, http_request by default).", verbose_name='approval tools')),
                    ('allow_private_addresses', models.BooleanField(default=False, help_text='Let http_request reach loopback and private addresses (tests, on-premises services).', verbose_name='allow private addresses')),
                    ('approval_expiry_hours', models.PositiveIntegerField(default=72, help_text='A request nobody decided within this many hours is refused.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(720)], verbose_name='approval expiry hours')),
                    ('workspace', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='tool_policy', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'workspace tool policy',
                    'verbose_name_plural': 'workspace tool policies',
                    'constraints': [models.CheckConstraint(condition=models.Q(('approval_expiry_hours__gte', 1), ('approval_expiry_hours__lte', 720)), name='agents_workspacetoolpolicy_expiry_bounded')],
                },
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.RemoveConstraint(
                model_name='agentturn',
                name='agents_agentturn_status_valid',
            ), migrations.AddField(
                model_name='historicalpromptversion',
                name='go_live_at',
                field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='go live at'),
            ), migrations.AddField(
                model_name='promptversion',
                name='go_live_at',
                field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='go live at'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddField(
                model_name='agentturn',
                name='root',
                field=models.ForeignKey(blank=True, help_text="The root turn of this turn's execution tree; null on a root.", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='descendants', to='agents.agentturn'),
            ), migrations.AddField(
                model_name='historicalpromptversion',
                name='go_live_problem',
                field=models.TextField(blank=True, editable=False, verbose_name='go live problem'),
            ), migrations.AddField(
                model_name='promptversion',
                name='go_live_problem',
                field=models.TextField(blank=True, editable=False, verbose_name='go live problem'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddField(
                model_name='historicalpromptversion',
                name='superseded_by',
                field=models.ForeignKey(blank=True, db_constraint=False, editable=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.promptversion'),
            ), migrations.AddField(
                model_name='promptversion',
                name='superseded_by',
                field=models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.promptversion'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddField(
                model_name='historicalpromptversion',
                name='tier',
                field=models.CharField(choices=[('wording', 'Wording'), ('identity', 'Identity'), ('power', 'Power')], default='wording', editable=False, max_length=20, verbose_name='tier'),
            ), migrations.AddField(
                model_name='promptversion',
                name='tier',
                field=models.CharField(choices=[('wording', 'Wording'), ('identity', 'Identity'), ('power', 'Power')], default='wording', editable=False, max_length=20, verbose_name='tier'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddField(
                model_name='historicalpromptversion',
                name='tier_reasons',
                field=models.JSONField(default=list, editable=False, verbose_name='tier reasons'),
            ), migrations.AddField(
                model_name='promptversion',
                name='tier_reasons',
                field=models.JSONField(default=list, editable=False, verbose_name='tier reasons'),
            )],
        ),
        aihummer.migration_operations.AlterAtOnce(
            operations=[migrations.AlterModelOptions(
                name='agent',
                options={'ordering': ['workspace__slug', 'key'], 'verbose_name': 'agent', 'verbose_name_plural': 'agents'},
            ), migrations.AlterModelOptions(
                name='agentsection',
                options={'ordering': ['agent', 'position'], 'verbose_name': 'agent section', 'verbose_name_plural': 'agent sections'},
            ), migrations.AlterModelOptions(
                name='agentskill',
                options={'ordering': ['agent', 'position'], 'verbose_name': 'agent skill', 'verbose_name_plural': 'agent skills'},
            ), migrations.AlterModelOptions(
                name='agenttestcase',
                options={'ordering': ['agent', 'name'], 'verbose_name': 'test case', 'verbose_name_plural': 'test cases'},
            ), migrations.AlterModelOptions(
                name='agentturn',
                options={'ordering': ['-started_at'], 'verbose_name': 'agent turn', 'verbose_name_plural': 'agent turns'},
            ), migrations.AlterModelOptions(
                name='credential',
                options={'ordering': ['workspace__slug', 'key'], 'verbose_name': 'credential', 'verbose_name_plural': 'credentials'},
            ), migrations.AlterModelOptions(
                name='debuglog',
                options={'ordering': ['turn', 'sequence'], 'verbose_name': 'debug log', 'verbose_name_plural': 'debug logs'},
            ), migrations.AlterModelOptions(
                name='evidencerun',
                options={'ordering': ['-created_at', '-id'], 'verbose_name': 'evidence run', 'verbose_name_plural': 'evidence runs'},
            ), migrations.AlterModelOptions(
                name='preset',
                options={'ordering': ['workspace__slug', 'key'], 'verbose_name': 'preset', 'verbose_name_plural': 'presets'},
            ), migrations.AlterModelOptions(
                name='promptversion',
                options={'ordering': ['agent', '-number'], 'verbose_name': 'prompt version', 'verbose_name_plural': 'prompt versions'},
            ), migrations.AlterModelOptions(
                name='skill',
                options={'ordering': ['workspace__slug', 'key'], 'verbose_name': 'skill', 'verbose_name_plural': 'skills'},
            ), migrations.AlterField(
                model_name='agent',
                name='allowed_tool_names',
                field=models.JSONField(blank=True, default=list, editable=False, verbose_name='allowed tool names'),
            ), migrations.AlterField(
                model_name='agent',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='agent',
                name='description',
                field=models.TextField(blank=True, verbose_name='description'),
            ), migrations.AlterField(
                model_name='agent',
                name='goals',
                field=models.JSONField(blank=True, default=list, editable=False, verbose_name='goals'),
            ), migrations.AlterField(
                model_name='agent',
                name='identity_name',
                field=models.CharField(blank=True, editable=False, max_length=200, verbose_name='identity name'),
            ), migrations.AlterField(
                model_name='agent',
                name='is_builtin',
                field=models.BooleanField(default=False, editable=False, verbose_name='is builtin'),
            ), migrations.AlterField(
                model_name='agent',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='agent',
                name='language',
                field=models.CharField(blank=True, editable=False, max_length=35, verbose_name='language'),
            ), migrations.AlterField(
                model_name='agent',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='agent',
                name='onboarding',
                field=models.TextField(blank=True, editable=False, verbose_name='onboarding'),
            ), migrations.AlterField(
                model_name='agent',
                name='persona',
                field=models.TextField(blank=True, editable=False, verbose_name='persona'),
            ), migrations.AlterField(
                model_name='agent',
                name='preset',
                field=models.ForeignKey(blank=True, help_text="The live version's preset (its snapshot's `preset`), written when a version goes live; empty: the workspace's default preset at run time.", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='agents', to='agents.preset', verbose_name='preset'),
            ), migrations.AlterField(
                model_name='agent',
                name='role',
                field=models.CharField(blank=True, editable=False, max_length=500, verbose_name='role'),
            ), migrations.AlterField(
                model_name='agent',
                name='runtime_policy',
                field=models.JSONField(blank=True, default=dict, editable=False, help_text="The live version's runtime policy, in the product document's names (agents.policy).", verbose_name='runtime policy'),
            ), migrations.AlterField(
                model_name='agent',
                name='system_prompt',
                field=models.TextField(blank=True, editable=False, null=True, verbose_name='system prompt'),
            ), migrations.AlterField(
                model_name='agent',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='agent',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='agents', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='agent',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sections', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='body',
                field=models.TextField(blank=True, verbose_name='body'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='enabled',
                field=models.BooleanField(default=True, verbose_name='enabled'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='position',
                field=models.PositiveIntegerField(verbose_name='position'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='title',
                field=models.CharField(blank=True, max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='agentsection',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='agent',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='skills', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='body',
                field=models.TextField(blank=True, verbose_name='body'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='position',
                field=models.PositiveIntegerField(verbose_name='position'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='shared',
                field=models.BooleanField(default=False, verbose_name='shared'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='title',
                field=models.CharField(blank=True, max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='agentskill',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='agent',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='test_cases', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='case_insensitive',
                field=models.BooleanField(default=False, help_text='contains, not_contains and regex ignore case.', verbose_name='case insensitive'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='contains',
                field=models.JSONField(blank=True, default=list, help_text='Strings the answer must contain.', verbose_name='contains'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='input',
                field=models.JSONField(blank=True, help_text='Instead of a message: a JSON object, sent to the agent as JSON text.', null=True, verbose_name='input'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='max_cost_usd',
                field=models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True, verbose_name='max cost usd'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='max_length',
                field=models.PositiveIntegerField(blank=True, help_text='Characters.', null=True, verbose_name='max length'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='max_tokens',
                field=models.PositiveIntegerField(blank=True, help_text='Tokens of the whole turn, input and output.', null=True, verbose_name='max tokens'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='message',
                field=models.TextField(blank=True, help_text='What the agent is asked.', verbose_name='message'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='min_length',
                field=models.PositiveIntegerField(blank=True, help_text='Characters.', null=True, verbose_name='min length'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='not_contains',
                field=models.JSONField(blank=True, default=list, help_text='Strings the answer must not contain.', verbose_name='not contains'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='regex',
                field=models.CharField(blank=True, help_text='A regular expression found in the answer.', max_length=500, verbose_name='regex'),
            ), migrations.AlterField(
                model_name='agenttestcase',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='actor_source',
                field=models.CharField(max_length=200, verbose_name='actor source'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='agent',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='turns', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='agent_key',
                field=models.CharField(max_length=50, verbose_name='agent key'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='answer',
                field=models.TextField(blank=True, verbose_name='answer'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='cached_input_tokens',
                field=models.PositiveIntegerField(default=0, verbose_name='cached input tokens'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='cost_usd',
                field=models.DecimalField(decimal_places=6, default=0, max_digits=12, verbose_name='cost usd'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='depth',
                field=models.PositiveSmallIntegerField(default=0, verbose_name='depth'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='dry_run',
                field=models.BooleanField(default=False, help_text='Side-effect tools were recorded, not executed.', verbose_name='dry run'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='error',
                field=models.TextField(blank=True, verbose_name='error'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='error_kind',
                field=models.CharField(blank=True, choices=[('', '—'), ('rate_limit', 'Rate limited'), ('unavailable', 'Provider unavailable'), ('timeout', 'Timed out'), ('deadline', "Out of the turn's time"), ('bad_request', 'Invalid request'), ('auth', 'Authentication'), ('quota', 'Quota exhausted'), ('invalid_response', 'Invalid response'), ('not_configured', 'Not configured'), ('internal', 'Internal error'), ('refused', "Refused by the turn's rules")], default='', max_length=20, verbose_name='error kind'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='finished_at',
                field=models.DateTimeField(blank=True, null=True, verbose_name='finished at'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='input_tokens',
                field=models.PositiveIntegerField(default=0, verbose_name='input tokens'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='message',
                field=models.TextField(verbose_name='message'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='model',
                field=models.CharField(blank=True, max_length=100, verbose_name='model'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='model_calls',
                field=models.PositiveIntegerField(default=0, verbose_name='model calls'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='output_tokens',
                field=models.PositiveIntegerField(default=0, verbose_name='output tokens'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='parent',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='children', to='agents.agentturn', verbose_name='parent'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='prefix_hash',
                field=models.CharField(blank=True, max_length=64, verbose_name='prefix hash'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='provider_name',
                field=models.CharField(blank=True, max_length=20, verbose_name='provider name'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='started_at',
                field=models.DateTimeField(default=django.utils.timezone.now, verbose_name='started at'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='started_by',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='started by'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='status',
                field=models.CharField(choices=[('running', 'Running'), ('waiting', 'Waiting for a person'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='running', max_length=20, verbose_name='status'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='version',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='turns', to='agents.promptversion', verbose_name='version'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='version_number',
                field=models.PositiveIntegerField(blank=True, null=True, verbose_name='version number'),
            ), migrations.AlterField(
                model_name='agentturn',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='agent_turns', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='credential',
                name='allowed_hosts',
                field=models.JSONField(blank=True, default=list, help_text='Hosts this secret may be sent to (api.openai.com, *.openai.azure.com); empty: any host.', validators=[agents.destinations.validate_host_patterns], verbose_name='allowed hosts'),
            ), migrations.AlterField(
                model_name='credential',
                name='ciphertext',
                field=models.TextField(editable=False, verbose_name='ciphertext'),
            ), migrations.AlterField(
                model_name='credential',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='credential',
                name='fingerprint',
                field=models.CharField(editable=False, max_length=8, verbose_name='fingerprint'),
            ), migrations.AlterField(
                model_name='credential',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='credential',
                name='name',
                field=models.CharField(blank=True, max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='credential',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='credential',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='credentials', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='allowed_tool_names',
                field=models.JSONField(blank=True, default=list, editable=False, verbose_name='allowed tool names'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='description',
                field=models.TextField(blank=True, verbose_name='description'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='goals',
                field=models.JSONField(blank=True, default=list, editable=False, verbose_name='goals'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='identity_name',
                field=models.CharField(blank=True, editable=False, max_length=200, verbose_name='identity name'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='is_builtin',
                field=models.BooleanField(default=False, editable=False, verbose_name='is builtin'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='language',
                field=models.CharField(blank=True, editable=False, max_length=35, verbose_name='language'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='onboarding',
                field=models.TextField(blank=True, editable=False, verbose_name='onboarding'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='persona',
                field=models.TextField(blank=True, editable=False, verbose_name='persona'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='preset',
                field=models.ForeignKey(blank=True, db_constraint=False, help_text="The live version's preset (its snapshot's `preset`), written when a version goes live; empty: the workspace's default preset at run time.", null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.preset', verbose_name='preset'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='role',
                field=models.CharField(blank=True, editable=False, max_length=500, verbose_name='role'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='runtime_policy',
                field=models.JSONField(blank=True, default=dict, editable=False, help_text="The live version's runtime policy, in the product document's names (agents.policy).", verbose_name='runtime policy'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='system_prompt',
                field=models.TextField(blank=True, editable=False, null=True, verbose_name='system prompt'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalagent',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='agent',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='body',
                field=models.TextField(blank=True, verbose_name='body'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='enabled',
                field=models.BooleanField(default=True, verbose_name='enabled'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='position',
                field=models.PositiveIntegerField(verbose_name='position'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='title',
                field=models.CharField(blank=True, max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='historicalagentsection',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='agent',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='body',
                field=models.TextField(blank=True, verbose_name='body'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='position',
                field=models.PositiveIntegerField(verbose_name='position'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='shared',
                field=models.BooleanField(default=False, verbose_name='shared'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='title',
                field=models.CharField(blank=True, max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='historicalagentskill',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='agent',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='case_insensitive',
                field=models.BooleanField(default=False, help_text='contains, not_contains and regex ignore case.', verbose_name='case insensitive'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='contains',
                field=models.JSONField(blank=True, default=list, help_text='Strings the answer must contain.', verbose_name='contains'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='input',
                field=models.JSONField(blank=True, help_text='Instead of a message: a JSON object, sent to the agent as JSON text.', null=True, verbose_name='input'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='max_cost_usd',
                field=models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True, verbose_name='max cost usd'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='max_length',
                field=models.PositiveIntegerField(blank=True, help_text='Characters.', null=True, verbose_name='max length'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='max_tokens',
                field=models.PositiveIntegerField(blank=True, help_text='Tokens of the whole turn, input and output.', null=True, verbose_name='max tokens'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='message',
                field=models.TextField(blank=True, help_text='What the agent is asked.', verbose_name='message'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='min_length',
                field=models.PositiveIntegerField(blank=True, help_text='Characters.', null=True, verbose_name='min length'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='not_contains',
                field=models.JSONField(blank=True, default=list, help_text='Strings the answer must not contain.', verbose_name='not contains'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='regex',
                field=models.CharField(blank=True, help_text='A regular expression found in the answer.', max_length=500, verbose_name='regex'),
            ), migrations.AlterField(
                model_name='historicalagenttestcase',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='allowed_hosts',
                field=models.JSONField(blank=True, default=list, help_text='Hosts this secret may be sent to (api.openai.com, *.openai.azure.com); empty: any host.', validators=[agents.destinations.validate_host_patterns], verbose_name='allowed hosts'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='fingerprint',
                field=models.CharField(editable=False, max_length=8, verbose_name='fingerprint'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='name',
                field=models.CharField(blank=True, max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalcredential',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='base_url',
                field=models.URLField(blank=True, help_text="OpenAI-compatible servers only (Ollama, vLLM, LM Studio…); empty: the vendor's API.", verbose_name='base URL'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='credential',
                field=models.ForeignKey(blank=True, db_constraint=False, help_text='The API key.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.credential', verbose_name='credential'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='max_output_tokens',
                field=models.PositiveIntegerField(blank=True, help_text="Empty: the model's own maximum.", null=True, validators=[django.core.validators.MinValueValidator(1)], verbose_name='max output tokens'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='model',
                field=models.CharField(max_length=100, verbose_name='model'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='streaming_enabled',
                field=models.BooleanField(default=False, verbose_name='streaming enabled'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='temperature',
                field=models.FloatField(default=1.0, validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(2.0)], verbose_name='temperature'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='timeout_seconds',
                field=models.PositiveIntegerField(default=60, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(600)], verbose_name='timeout seconds'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='top_p',
                field=models.FloatField(default=0.95, validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(1.0)], verbose_name='top p'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalpreset',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='agent',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='content_hash',
                field=models.CharField(max_length=64, verbose_name='content hash'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='diff_stats',
                field=models.JSONField(default=dict, editable=False, verbose_name='diff stats'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='number',
                field=models.PositiveIntegerField(verbose_name='number'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='proposed_by',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='proposed by'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='proposer_identity',
                field=models.CharField(max_length=120, verbose_name='proposer identity'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='reason',
                field=models.TextField(blank=True, verbose_name='reason'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='review_note',
                field=models.TextField(blank=True, verbose_name='review note'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='reviewed_at',
                field=models.DateTimeField(blank=True, null=True, verbose_name='reviewed at'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='reviewed_by',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='reviewed by'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='source',
                field=models.CharField(help_text='Who proposed it, through what: admin:alice, mcp:ci/claude…', max_length=200, verbose_name='source'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='status',
                field=models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('withdrawn', 'Withdrawn')], default='pending', max_length=20, verbose_name='status'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalpromptversion',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='body',
                field=models.TextField(verbose_name='body'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='title',
                field=models.CharField(max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalskill',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='preset',
                name='base_url',
                field=models.URLField(blank=True, help_text="OpenAI-compatible servers only (Ollama, vLLM, LM Studio…); empty: the vendor's API.", verbose_name='base URL'),
            ), migrations.AlterField(
                model_name='preset',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='preset',
                name='credential',
                field=models.ForeignKey(blank=True, help_text='The API key.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='presets', to='agents.credential', verbose_name='credential'),
            ), migrations.AlterField(
                model_name='preset',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='preset',
                name='max_output_tokens',
                field=models.PositiveIntegerField(blank=True, help_text="Empty: the model's own maximum.", null=True, validators=[django.core.validators.MinValueValidator(1)], verbose_name='max output tokens'),
            ), migrations.AlterField(
                model_name='preset',
                name='model',
                field=models.CharField(max_length=100, verbose_name='model'),
            ), migrations.AlterField(
                model_name='preset',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='preset',
                name='streaming_enabled',
                field=models.BooleanField(default=False, verbose_name='streaming enabled'),
            ), migrations.AlterField(
                model_name='preset',
                name='temperature',
                field=models.FloatField(default=1.0, validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(2.0)], verbose_name='temperature'),
            ), migrations.AlterField(
                model_name='preset',
                name='timeout_seconds',
                field=models.PositiveIntegerField(default=60, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(600)], verbose_name='timeout seconds'),
            ), migrations.AlterField(
                model_name='preset',
                name='top_p',
                field=models.FloatField(default=0.95, validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(1.0)], verbose_name='top p'),
            ), migrations.AlterField(
                model_name='preset',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='preset',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='presets', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='agent',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='versions', to='agents.agent', verbose_name='agent'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='content_hash',
                field=models.CharField(max_length=64, verbose_name='content hash'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='diff_stats',
                field=models.JSONField(default=dict, editable=False, verbose_name='diff stats'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='number',
                field=models.PositiveIntegerField(verbose_name='number'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='proposed_by',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='proposed by'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='proposer_identity',
                field=models.CharField(max_length=120, verbose_name='proposer identity'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='reason',
                field=models.TextField(blank=True, verbose_name='reason'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='review_note',
                field=models.TextField(blank=True, verbose_name='review note'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='reviewed_at',
                field=models.DateTimeField(blank=True, null=True, verbose_name='reviewed at'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='reviewed_by',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='reviewed by'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='snapshot',
                field=models.JSONField(verbose_name='snapshot'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='source',
                field=models.CharField(help_text='Who proposed it, through what: admin:alice, mcp:ci/claude…', max_length=200, verbose_name='source'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='status',
                field=models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('withdrawn', 'Withdrawn')], default='pending', max_length=20, verbose_name='status'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='promptversion',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='prompt_versions', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='skill',
                name='body',
                field=models.TextField(verbose_name='body'),
            ), migrations.AlterField(
                model_name='skill',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='skill',
                name='key',
                field=models.CharField(max_length=50, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='key'),
            ), migrations.AlterField(
                model_name='skill',
                name='title',
                field=models.CharField(max_length=200, verbose_name='title'),
            ), migrations.AlterField(
                model_name='skill',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='skill',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='skills', to='aihummer.workspace', verbose_name='workspace'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddConstraint(
                model_name='agentturn',
                constraint=models.CheckConstraint(condition=models.Q(('status__in', ['running', 'waiting', 'succeeded', 'failed'])), name='agents_agentturn_status_valid'),
            ), migrations.AddConstraint(
                model_name='promptversion',
                constraint=models.CheckConstraint(condition=models.Q(('tier__in', ['wording', 'identity', 'power'])), name='agents_promptversion_tier_valid'),
            )],
        ),
        migrations.AddConstraint(
            model_name='promptversion',
            constraint=models.CheckConstraint(condition=models.Q(('go_live_at__isnull', True), ('status', 'pending'), _connector='OR'), name='agents_promptversion_scheduled_only_pending'),
        ),
    ]
