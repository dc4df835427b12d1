"""Squashed migrations, for databases made from nothing (issue 27).

Migrating an empty database through the 47 original migrations cost about 11 s of CPU
on SQLite and on PostgreSQL (14 and 16 s on a loaded machine), nearly all of it Django
re-rendering the models after each operation (nearly every model points at the
workspace). Five squashes replace them on a database that has none of a group applied;
a database with all or part of a group applied keeps migrating through that group's
originals, which stay on disk.

Squashed per app, the apps' dependencies would make a cycle (aihummer 0003 needs agents
0001, agents 0011+ need aihummer 0006-0011), so they are squashed in five groups, each
needing only what came before it:

    aihummer 0001-0002 -> agents 0001-0010 -> aihummer 0003-0012 -> agents 0011-0028
                                           -> workflows 0001-0007

Each squash's operations are what the autodetector finds between the state before its
group and the state after it (so the state is exactly the originals'), folded by hand:
a created model's added fields (but for foreign keys in a cycle), indexes and
constraints are in its CreateModel, the created models after those they point at. Then,
rendered once each (aihummer/migration_operations.py): the created models are one
CreateAtOnce, each run of changes to earlier models (fields and constraints added,
constraints removed) a few ChangeAtOnce of one change per model, and the alterations of
earlier models' fields and options one AlterAtOnce (labels and help texts: none changes
the schema). Left out: the originals' data migrations (agents 0007, 0012, 0015, 0017,
0021, 0022, marked elidable), which only rewrite existing rows. Kept: agents 0006's
constraints and triggers (PostgreSQL), at the end of agents 0001_squashed_0010.
agents/tests/test_migrations.py checks that both ways leave the same schema.

A migration from nothing now costs about 3 s of CPU on either (best of 3, 2.8 and 2.6 s).
"""

import aihummer.migration_operations
import django.contrib.auth.models
import django.contrib.auth.validators
import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import simple_history.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [
        ('aihummer', '0001_initial'),
        ('aihummer', '0002_oidc_identity_and_sso_memberships'),
    ]

    initial = True

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        aihummer.migration_operations.CreateAtOnce(
            operations=[migrations.CreateModel(
                name='Workspace',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('slug', models.SlugField(unique=True, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")])),
                    ('name', models.CharField(max_length=200)),
                    ('every_change_needs_review', models.BooleanField(default=False, help_text='When set, even members with the publish right propose changes for a second person to approve.')),
                ],
                options={
                    'ordering': ['slug'],
                },
            ), migrations.CreateModel(
                name='User',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('password', models.CharField(max_length=128, verbose_name='password')),
                    ('last_login', models.DateTimeField(blank=True, null=True, verbose_name='last login')),
                    ('is_superuser', models.BooleanField(default=False, help_text='Designates that this user has all permissions without explicitly assigning them.', verbose_name='superuser status')),
                    ('username', models.CharField(error_messages={'unique': 'A user with that username already exists.'}, help_text='Required. 150 characters or fewer. Letters, digits and @/./+/-/_ only.', max_length=150, unique=True, validators=[django.contrib.auth.validators.UnicodeUsernameValidator()], verbose_name='username')),
                    ('first_name', models.CharField(blank=True, max_length=150, verbose_name='first name')),
                    ('last_name', models.CharField(blank=True, max_length=150, verbose_name='last name')),
                    ('email', models.EmailField(blank=True, max_length=254, verbose_name='email address')),
                    ('is_staff', models.BooleanField(default=False, help_text='Designates whether the user can log into this admin site.', verbose_name='staff status')),
                    ('is_active', models.BooleanField(default=True, help_text='Designates whether this user should be treated as active. Unselect this instead of deleting accounts.', verbose_name='active')),
                    ('date_joined', models.DateTimeField(default=django.utils.timezone.now, verbose_name='date joined')),
                    ('groups', models.ManyToManyField(blank=True, help_text='The groups this user belongs to. A user will get all permissions granted to each of their groups.', related_name='user_set', related_query_name='user', to='auth.group', verbose_name='groups')),
                    ('user_permissions', models.ManyToManyField(blank=True, help_text='Specific permissions for this user.', related_name='user_set', related_query_name='user', to='auth.permission', verbose_name='user permissions')),
                ],
                options={
                    'verbose_name': 'user',
                    'verbose_name_plural': 'users',
                    'abstract': False,
                    'swappable': 'AUTH_USER_MODEL',
                },
                managers=[
                    ('objects', django.contrib.auth.models.UserManager()),
                ],
            ), migrations.CreateModel(
                name='HistoricalWorkspace',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False)),
                    ('updated_at', models.DateTimeField(blank=True, editable=False)),
                    ('slug', models.SlugField(validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")])),
                    ('name', models.CharField(max_length=200)),
                    ('every_change_needs_review', models.BooleanField(default=False, help_text='When set, even members with the publish right propose changes for a second person to approve.')),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name': 'historical workspace',
                    'verbose_name_plural': 'historical workspaces',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='HistoricalMembership',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False)),
                    ('updated_at', models.DateTimeField(blank=True, editable=False)),
                    ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20)),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('managed_by_sso', models.BooleanField(default=False, help_text="Granted by the person's groups at the identity provider, and removed with them at their next login. Memberships granted here are never touched by single sign-on.", verbose_name='managed by SSO')),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('user', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace')),
                ],
                options={
                    'verbose_name': 'historical membership',
                    'verbose_name_plural': 'historical memberships',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='HistoricalApiKey',
                fields=[
                    ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                    ('created_at', models.DateTimeField(blank=True, editable=False)),
                    ('updated_at', models.DateTimeField(blank=True, editable=False)),
                    ('name', models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")])),
                    ('scopes', models.CharField(help_text='Comma-separated: read, write, publish.', max_length=50)),
                    ('revoked_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('history_id', models.AutoField(primary_key=True, serialize=False)),
                    ('history_date', models.DateTimeField(db_index=True)),
                    ('history_change_reason', models.CharField(max_length=100, null=True)),
                    ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                    ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('owner', models.ForeignKey(blank=True, db_constraint=False, help_text='The person answerable for this key; they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='aihummer.workspace')),
                ],
                options={
                    'verbose_name': 'historical API key',
                    'verbose_name_plural': 'historical API keys',
                    'ordering': ('-history_date', '-history_id'),
                    'get_latest_by': ('history_date', 'history_id'),
                },
                bases=(simple_history.models.HistoricalChanges, models.Model),
            ), migrations.CreateModel(
                name='OidcIdentity',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('issuer', models.CharField(max_length=255)),
                    ('subject', models.CharField(max_length=255)),
                    ('last_login_at', models.DateTimeField(blank=True, null=True)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='oidc_identities', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'verbose_name': 'OpenID identity',
                    'verbose_name_plural': 'OpenID identities',
                    'constraints': [models.UniqueConstraint(fields=('issuer', 'subject'), name='aihummer_oidcidentity_unique_subject'), models.UniqueConstraint(fields=('user', 'issuer'), name='aihummer_oidcidentity_unique_user_issuer')],
                },
            ), migrations.CreateModel(
                name='Membership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='viewer', max_length=20)),
                    ('managed_by_sso', models.BooleanField(default=False, help_text="Granted by the person's groups at the identity provider, and removed with them at their next login. Memberships granted here are never touched by single sign-on.", verbose_name='managed by SSO')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='aihummer.workspace')),
                ],
                options={
                    'ordering': ['workspace__slug', 'user__username'],
                    'constraints': [models.UniqueConstraint(fields=('user', 'workspace'), name='aihummer_membership_unique_user'), models.CheckConstraint(condition=models.Q(('role__in', ['viewer', 'editor', 'reviewer', 'admin'])), name='aihummer_membership_role_valid')],
                },
            ), migrations.CreateModel(
                name='ApiKey',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('name', models.CharField(max_length=100, validators=[django.core.validators.RegexValidator('^[a-z0-9_-]+$', "Use lowercase letters, digits, '_' and '-' only.")])),
                    ('scopes', models.CharField(help_text='Comma-separated: read, write, publish.', max_length=50)),
                    ('secret_digest', models.CharField(editable=False, max_length=64)),
                    ('revoked_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('last_used_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('owner', models.ForeignKey(blank=True, help_text='The person answerable for this key; they may not approve what it proposes.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_keys', to=settings.AUTH_USER_MODEL)),
                    ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='aihummer.workspace')),
                ],
                options={
                    'verbose_name': 'API key',
                    'ordering': ['workspace__slug', 'name'],
                    'constraints': [models.UniqueConstraint(fields=('workspace', 'name'), name='aihummer_apikey_unique_name'), models.CheckConstraint(condition=models.Q(('scopes__regex', '^(read|write|publish)(,(read|write|publish))*$')), name='aihummer_apikey_scopes_valid')],
                },
            )],
        ),
    ]
