"""Squashed migration for databases made from nothing: aihummer 0003-0012.
Why and how: aihummer/migrations/0001_squashed_0002.py."""

import aihummer.migration_operations
import django.core.validators
import django.db.models.deletion
import simple_history.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [
        ('aihummer', '0003_workspace_evidence_settings'),
        ('aihummer', '0004_api_key_created_by'),
        ('aihummer', '0005_workspace_invitations'),
        ('aihummer', '0006_api_audit_and_idempotency_keys'),
        ('aihummer', '0007_api_key_vouch_scope'),
        ('aihummer', '0008_user_desk_language'),
        ('aihummer', '0009_desk_french_model_names'),
        ('aihummer', '0010_desk_french_field_names'),
        ('aihummer', '0011_desk_french_desk_names'),
        ('aihummer', '0012_desk_french_workspace_names'),
    ]

    dependencies = [
        ('agents', '0001_initial'),
        ('aihummer', '0002_oidc_identity_and_sso_memberships'),
    ]

    operations = [
        aihummer.migration_operations.CreateAtOnce(
            operations=[migrations.CreateModel(
                name='ApiAuditEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('request_id', models.CharField(db_index=True, max_length=128, verbose_name='request id')),
                    ('actor_source', models.CharField(help_text='api:<key name>, api:<username>…', max_length=200, verbose_name='actor')),
                    ('method', models.CharField(max_length=10, verbose_name='method')),
                    ('path', models.CharField(max_length=500, verbose_name='path')),
                    ('status_code', models.PositiveSmallIntegerField(verbose_name='status code')),
                    ('person', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='person')),
                    ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_audit_entries', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'API audit entry',
                    'verbose_name_plural': 'API audit entries',
                    'ordering': ['-created_at'],
                },
            ), migrations.CreateModel(
                name='HistoricalInvitation',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(blank=True, editable=False, verbose_name='updated at')),
                    ('identifier', models.CharField(help_text='Exactly as the person signs in, or their e-mail address.', max_length=254, verbose_name='username or e-mail')),
                    ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20, verbose_name='role')),
                    ('accepted_at', models.DateTimeField(blank=True, editable=False, null=True, verbose_name='accepted at')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('invited_by', models.ForeignKey(blank=True, db_constraint=False, editable=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='invited by')),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'verbose_name': 'historical invitation',
                    'verbose_name_plural': 'historical invitations',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='IdempotencyKey',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('owner', models.CharField(max_length=60)),
                    ('key', models.CharField(max_length=255)),
                    ('request_hash', models.CharField(help_text='SHA-256 of method, path and body.', max_length=64)),
                    ('status_code', models.PositiveSmallIntegerField(blank=True, help_text='Empty while the request runs.', null=True)),
                    ('response_body', models.JSONField(blank=True, null=True)),
                    ('location', models.CharField(blank=True, max_length=500)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                ],
                options={
                    'constraints': [models.UniqueConstraint(fields=('owner', 'key'), name='aihummer_idempotencykey_unique_key')],
                },
            ), migrations.CreateModel(
                name='Invitation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created at')),
                    ('updated_at', models.DateTimeField(auto_now=True, verbose_name='updated at')),
                    ('identifier', models.CharField(help_text='Exactly as the person signs in, or their e-mail address.', max_length=254, verbose_name='username or e-mail')),
                    ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20, verbose_name='role')),
                    ('accepted_at', models.DateTimeField(blank=True, editable=False, null=True, verbose_name='accepted at')),
                    ('invited_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='invited by')),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='aihummer.workspace', verbose_name='workspace')),
                ],
                options={
                    'ordering': ['workspace__slug', 'identifier'],
                    'verbose_name': 'invitation',
                    'verbose_name_plural': 'invitations',
                    'constraints': [models.UniqueConstraint(fields=('workspace', 'identifier'), name='aihummer_invitation_unique_identifier'), models.CheckConstraint(condition=models.Q(('role__in', ['viewer', 'editor', 'reviewer', 'admin'])), name='aihummer_invitation_role_valid')],
                },
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.RemoveConstraint(
                model_name='apikey',
                name='aihummer_apikey_scopes_valid',
            ), migrations.AddField(
                model_name='historicalapikey',
                name='created_by',
                field=models.ForeignKey(blank=True, db_constraint=False, editable=False, help_text='Who created the key; like its owner, they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='created by'),
            ), migrations.AddField(
                model_name='historicalworkspace',
                name='block_approval_on_regressions',
                field=models.BooleanField(default=False, help_text='When set, approving a proposal that fails a test case live passes needs an explicit confirmation naming those cases.', verbose_name='block approval on regressions'),
            ), migrations.AddField(
                model_name='user',
                name='language',
                field=models.CharField(blank=True, choices=[('en', 'English'), ('fr', 'Français')], help_text='The language the desk speaks to this person; blank follows their browser.', max_length=8, verbose_name='desk language'),
            ), migrations.AddField(
                model_name='workspace',
                name='block_approval_on_regressions',
                field=models.BooleanField(default=False, help_text='When set, approving a proposal that fails a test case live passes needs an explicit confirmation naming those cases.', verbose_name='block approval on regressions'),
            )],
        ),
        aihummer.migration_operations.ChangeAtOnce(
            operations=[migrations.AddField(
                model_name='apikey',
                name='created_by',
                field=models.ForeignKey(blank=True, editable=False, help_text='Who created the key; like its owner, they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='created by'),
            ), migrations.AddField(
                model_name='historicalworkspace',
                name='judge_preset',
                field=models.ForeignKey(blank=True, db_constraint=False, help_text='An OpenAI-compatible preset that scores each proposal (advisory, never blocks). Empty: no judge.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='agents.preset', verbose_name='judge preset'),
            ), migrations.AddField(
                model_name='workspace',
                name='judge_preset',
                field=models.ForeignKey(blank=True, help_text='An OpenAI-compatible preset that scores each proposal (advisory, never blocks). Empty: no judge.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents.preset', verbose_name='judge preset'),
            )],
        ),
        aihummer.migration_operations.AlterAtOnce(
            operations=[migrations.AlterModelOptions(
                name='apikey',
                options={'ordering': ['workspace__slug', 'name'], 'verbose_name': 'API key', 'verbose_name_plural': 'API keys'},
            ), migrations.AlterModelOptions(
                name='membership',
                options={'ordering': ['workspace__slug', 'user__username'], 'verbose_name': 'membership', 'verbose_name_plural': 'memberships'},
            ), migrations.AlterModelOptions(
                name='workspace',
                options={'ordering': ['slug'], 'verbose_name': 'workspace', 'verbose_name_plural': 'workspaces'},
            ), migrations.AlterField(
                model_name='apikey',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='apikey',
                name='last_used_at',
                field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='last used at'),
            ), migrations.AlterField(
                model_name='apikey',
                name='name',
                field=models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='name'),
            ), migrations.AlterField(
                model_name='apikey',
                name='owner',
                field=models.ForeignKey(blank=True, help_text='The person answerable for this key; they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_keys', to=settings.AUTH_USER_MODEL, verbose_name='owner'),
            ), migrations.AlterField(
                model_name='apikey',
                name='revoked_at',
                field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='revoked at'),
            ), migrations.AlterField(
                model_name='apikey',
                name='scopes',
                field=models.CharField(help_text='Comma-separated: read, write, publish, vouch.', max_length=50, verbose_name='scopes'),
            ), migrations.AlterField(
                model_name='apikey',
                name='secret_digest',
                field=models.CharField(editable=False, max_length=64, verbose_name='secret digest'),
            ), migrations.AlterField(
                model_name='apikey',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='apikey',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='name',
                field=models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='owner',
                field=models.ForeignKey(blank=True, db_constraint=False, help_text='The person answerable for this key; they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='owner'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='revoked_at',
                field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='revoked at'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='scopes',
                field=models.CharField(help_text='Comma-separated: read, write, publish, vouch.', max_length=50, verbose_name='scopes'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalapikey',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalmembership',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalmembership',
                name='role',
                field=models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20, verbose_name='role'),
            ), migrations.AlterField(
                model_name='historicalmembership',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='historicalmembership',
                name='user',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='user'),
            ), migrations.AlterField(
                model_name='historicalmembership',
                name='workspace',
                field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='historicalworkspace',
                name='created_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='historicalworkspace',
                name='every_change_needs_review',
                field=models.BooleanField(default=False, help_text='When set, even members with the publish right propose changes for a second person to approve.', verbose_name='every change needs review'),
            ), migrations.AlterField(
                model_name='historicalworkspace',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='historicalworkspace',
                name='slug',
                field=models.SlugField(validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='slug'),
            ), migrations.AlterField(
                model_name='historicalworkspace',
                name='updated_at',
                field=models.DateTimeField(blank=True, editable=False, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='membership',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='membership',
                name='role',
                field=models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20, verbose_name='role'),
            ), migrations.AlterField(
                model_name='membership',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='membership',
                name='user',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL, verbose_name='user'),
            ), migrations.AlterField(
                model_name='membership',
                name='workspace',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='aihummer.workspace', verbose_name='workspace'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='issuer',
                field=models.CharField(max_length=255, verbose_name='issuer'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='last_login_at',
                field=models.DateTimeField(blank=True, null=True, verbose_name='last login at'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='subject',
                field=models.CharField(max_length=255, verbose_name='subject'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            ), migrations.AlterField(
                model_name='oidcidentity',
                name='user',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='oidc_identities', to=settings.AUTH_USER_MODEL, verbose_name='user'),
            ), migrations.AlterField(
                model_name='workspace',
                name='created_at',
                field=models.DateTimeField(auto_now_add=True, verbose_name='created at'),
            ), migrations.AlterField(
                model_name='workspace',
                name='every_change_needs_review',
                field=models.BooleanField(default=False, help_text='When set, even members with the publish right propose changes for a second person to approve.', verbose_name='every change needs review'),
            ), migrations.AlterField(
                model_name='workspace',
                name='name',
                field=models.CharField(max_length=200, verbose_name='name'),
            ), migrations.AlterField(
                model_name='workspace',
                name='slug',
                field=models.SlugField(unique=True, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")], verbose_name='slug'),
            ), migrations.AlterField(
                model_name='workspace',
                name='updated_at',
                field=models.DateTimeField(auto_now=True, verbose_name='updated at'),
            )],
        ),
        migrations.AddConstraint(
            model_name='apikey',
            constraint=models.CheckConstraint(condition=models.Q(('scopes__regex', '^(read|write|publish|vouch)(,(read|write|publish|vouch))*$')), name='aihummer_apikey_scopes_valid'),
        ),
    ]
