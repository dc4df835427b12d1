"""Personas shared by every test: alice proposes, bob reviews, charlie is elsewhere.

- workspace `acme`: alice (editor), bob (reviewer), ada (admin), vic (viewer)
- workspace `globex`: charlie (editor)
- root: a superuser, member of nothing
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import uuid

import pytest
from django.conf import settings
from django.db import connections

from aihummer.actors import Actor
from aihummer.models import Membership, User, Workspace

# Fixtures more than one app's tests use, kept in their own modules.
pytest_plugins = ["aihummer.tests.sso_helpers"]


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if engine != "django.db.backends.postgresql":
        raise pytest.UsageError(
            "The test suite runs on PostgreSQL, not "
            f"{engine}: run `make test`, or set DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer."
        )
    # Personas are created in nearly every test: a deliberately slow password hash
    # would be most of the suite's time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Every commit of the tests, and of the servers and workers they start (libpq reads
    # PGOPTIONS), returns without waiting for its WAL flush: 0.3 ms instead of 1.7-3.5 ms
    # on this machine. Only a PostgreSQL crash could lose the last commits, and the test
    # databases are thrown away. The cluster's own settings are left alone (benches and
    # other suites share it); never a production setting.
    os.environ.setdefault("PGOPTIONS", "-c synchronous_commit=off")
    # A transactional test empties the tables with DELETE, not TRUNCATE: 10 ms, not 0.4 s.
    from aihummer.tests import flush

    flush.install()
    if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", "") is None:
        # The run's id, chosen here so that the controller knows which template its
        # workers made (aihummer/tests/databases.py); xdist hands it to every worker.
        config.option.testrunuid = uuid.uuid4().hex


# Test modules by measured cost, slowest first (whole-module wall seconds of a -n 4 run on
# a quiet machine, 2026-12-04; most start servers, workers, browsers or hosts, or wait on
# leases). `make test` hands out whole modules (--dist loadfile: a module's fixtures are
# made once), in this order and then the rest (each under 4 s), so that the run ends on
# short modules: no xdist worker is left with a long one, mostly waiting, while the
# others have nothing to do. Any order is correct.
RUN_FIRST = (
    "aihummer/tests/test_url_walk.py",  # 137 s
    "workflows/tests/test_multihost.py",  # 90 s
    "agents/tests/test_tree.py",  # 79 s
    "aihummer/tests/test_embedded_default.py",  # 47 s
    "aihummer/tests/test_deploy.py",  # 47 s
    "agents/tests/test_migrations.py",  # 45 s
    "agents/tests/test_api_schema.py",  # 40 s
    "aihummer/tests/test_settings.py",  # 39 s
    "workflows/tests/test_approvals_crash.py",  # 34 s
    "workflows/tests/test_worker_crash.py",  # 32 s
    "agents/tests/test_provider_clients.py",  # 30 s
    "agents/tests/test_races_http.py",  # 23 s
    "agents/tests/test_deadlines.py",  # 21 s
    "workflows/tests/test_worker.py",  # 20 s
    "aihummer/tests/test_mcp_hostile.py",  # 19 s
    "aihummer/tests/test_mcp_structured.py",  # 18 s
    "workflows/tests/test_durability.py",  # 18 s
    "aihummer/tests/test_mcp.py",  # 17 s
    "workflows/tests/test_desk_layout_browser.py",  # 17 s
    "agents/tests/test_mcp.py",  # 16 s
    "agents/tests/test_api_conversations.py",  # 16 s
    "sandbox/tests/test_lifecycle.py",  # 16 s
    "aihummer/tests/test_mcp_oauth.py",  # 16 s
    "workflows/tests/test_mcp_progress.py",  # 15 s
    "agents/tests/test_browser_review.py",  # 14 s
    "workflows/tests/test_approvals_browser.py",  # 13 s
    "agents/tests/test_mcp_progress.py",  # 11 s
    "agents/tests/test_api_foundation.py",  # 11 s
    "aihummer/tests/test_sso_browser.py",  # 11 s
    "agents/tests/test_handoff.py",  # 11 s
    "agents/tests/test_evidence_browser.py",  # 10 s
    "agents/tests/test_review_desk.py",  # 10 s
    "agents/tests/test_api_agents.py",  # 10 s
    "aihummer/tests/test_sso.py",  # 9 s
    "agents/tests/test_browser_quorum.py",  # 9 s
    "sandbox/tests/test_mcp_tools.py",  # 9 s
    "agents/tests/test_admin_agents.py",  # 9 s
    "agents/tests/test_approval.py",  # 9 s
    "aihummer/tests/test_desk_french_pages.py",  # 8 s
    "agents/tests/test_approvals.py",  # 8 s
    "workflows/tests/test_browser_desk.py",  # 8 s
    "aihummer/tests/test_mcp_conformance.py",  # 8 s
    "agents/tests/test_api_compaction.py",  # 7 s
    "sandbox/tests/test_beat.py",  # 7 s
    "agents/tests/test_browser_prompt_panes.py",  # 7 s
    "agents/tests/test_scheduled_go_live.py",  # 7 s
    "agents/tests/test_tools.py",  # 7 s
    "workflows/tests/test_approvals.py",  # 6 s
    "agents/tests/test_secret_echo.py",  # 6 s
    "aihummer/tests/test_admin_filters_scoped.py",  # 6 s
    "aihummer/tests/test_metrics.py",  # 6 s
    "agents/tests/test_evidence_admin.py",  # 5 s
    "agents/tests/test_runtime.py",  # 5 s
    "agents/tests/test_run_test_cases_command.py",  # 5 s
    "agents/tests/test_api_prompt_versions.py",  # 5 s
    "agents/tests/test_api_pruning.py",  # 5 s
    "agents/tests/test_secrets_at_the_door.py",  # 5 s
    "agents/tests/test_secret_leaks.py",  # 5 s
    "agents/tests/test_check_preset.py",  # 5 s
    "workflows/tests/test_admin_runs.py",  # 5 s
    "agents/tests/test_admin_turns.py",  # 5 s
    "agents/tests/test_api_runtime_policy.py",  # 5 s
    "agents/tests/test_providers.py",  # 5 s
    "agents/tests/test_conversation_approvals.py",  # 5 s
    "aihummer/tests/test_seed_demo.py",  # 4 s
    "agents/tests/test_api_streaming.py",  # 4 s
    "workflows/tests/test_mcp_waiting.py",  # 4 s
    "agents/tests/test_api_approvals.py",  # 4 s
    "agents/tests/test_admin_execution_tree.py",  # 4 s
)


def _unique_ids(items: list[pytest.Item]) -> None:
    """schemathesis gives the item of each API operation the test function's id (the
    operation is in its name only). `--dist loadfile` hands tests out by id and would run
    only one of them: those ids get the item's name."""
    counts = collections.Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1:
            item._id = type(item.id).parse(f"{item.nodeid.rpartition('::')[0]}::{item.name}")
    repeated = [nodeid for nodeid, count in collections.Counter(item.nodeid for item in items).items() if count > 1]
    if repeated:
        raise pytest.UsageError(f"Tests sharing an id (xdist would run one of each): {repeated[:5]}")


@pytest.hookimpl(trylast=True)  # after pytest-django's order (db, transactional, no db), kept within each part
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _unique_ids(items)
    rank = {path: index for index, path in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(RUN_FIRST)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    run_id = getattr(session.config.option, "testrunuid", None)
    if not hasattr(session.config, "workerinput") and run_id:
        from aihummer.tests import databases

        databases.drop_template(run_id)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest,
    django_db_modify_db_settings_parallel_suffix: None,
    django_db_blocker,
    django_db_keepdb: bool,
    django_db_use_migrations: bool,
) -> None:
    """Under xdist, each worker's test database is a copy of one migrated once per run
    (aihummer/tests/databases.py): one migrate instead of one per worker."""
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is None or django_db_keepdb or not django_db_use_migrations:
        return
    from aihummer.tests import databases

    with django_db_blocker.unblock():
        databases.use_template(worker=workerinput["workerid"], run_id=workerinput["testrunuid"])


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    # pytest-httpserver's one server per session, on the loopback address rather than its
    # default name `localhost` (which may resolve to ::1 first): every client of it, the
    # vendors' SDKs included, reaches the same socket without asking the resolver.
    return ("127.0.0.1", 0)


def make_member(workspace: Workspace, username: str, role: str) -> User:
    user = User.objects.create_user(username=username, email=f"{username}@example.com", password="pw-" + username)
    Membership.objects.create(user=user, workspace=workspace, role=role)
    return user


@pytest.fixture
def workspace(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def other_workspace(db: None) -> Workspace:
    return Workspace.objects.create(slug="globex", name="Globex")


@pytest.fixture
def alice(workspace: Workspace) -> User:
    return make_member(workspace, "alice", Membership.Role.EDITOR)


@pytest.fixture
def bob(workspace: Workspace) -> User:
    return make_member(workspace, "bob", Membership.Role.REVIEWER)


@pytest.fixture
def ada(workspace: Workspace) -> User:
    return make_member(workspace, "ada", Membership.Role.ADMIN)


@pytest.fixture
def vic(workspace: Workspace) -> User:
    return make_member(workspace, "vic", Membership.Role.VIEWER)


@pytest.fixture
def charlie(other_workspace: Workspace) -> User:
    return make_member(other_workspace, "charlie", Membership.Role.EDITOR)


@pytest.fixture
def root(db: None) -> User:
    return User.objects.create_superuser(username="root", email="root@example.com", password="pw-root")


@pytest.fixture
def actor_of():
    return lambda user: Actor.for_user(user)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis database of this xdist worker's own, so parallel workers never share queues.
    `AIHUMMER_TEST_REDIS_DB_BASE` moves the range, so two suites can run side by side."""
    base = os.environ.get("AIHUMMER_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    first = int(os.environ.get("AIHUMMER_TEST_REDIS_DB_BASE", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    number = first + int(worker.removeprefix("gw") or 0)
    if number > 15:  # Redis's default 16 databases: a higher number is refused at the first command
        pytest.fail(
            f"This xdist worker would use Redis database {number}; Redis has 0-15: lower "
            f"AIHUMMER_TEST_REDIS_DB_BASE ({first}) or the number of workers (make test PYTEST_WORKERS=...)."
        )
    return f"{base}/{number}"


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    """A RabbitMQ virtual host of this xdist worker's own (127.0.0.1:5672, guest), made
    with rabbitmqctl the first time (`bin/ensure-services` starts the server); it stays
    for the next runs."""
    from kombu import Connection

    first = int(os.environ.get("AIHUMMER_TEST_REDIS_DB_BASE", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    vhost = f"aihummer-test-{first + int(worker.removeprefix('gw') or 0)}"
    url = f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
    # Opening it is the check: each rabbitmqctl call boots an Erlang VM (0.4 s of CPU).
    with contextlib.suppress(Exception), Connection(url, connect_timeout=10) as connection:
        connection.connect()
        return url
    existing = subprocess.run(["rabbitmqctl", "-q", "list_vhosts"], capture_output=True, text=True, check=True)
    if vhost not in existing.stdout.split():
        subprocess.run(["rabbitmqctl", "-q", "add_vhost", vhost], capture_output=True, check=True)
    permissions = ["rabbitmqctl", "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"]
    subprocess.run(permissions, capture_output=True, check=True)
    return url


@pytest.fixture(params=["redis", "rabbitmq"])
def broker_url(request, redis_url) -> str:
    """An empty broker of this xdist worker's own: each test using it runs on Redis and
    on RabbitMQ."""
    from kombu import Connection

    url = redis_url if request.param == "redis" else request.getfixturevalue("rabbitmq_url")
    with Connection(url) as connection:
        channel = connection.default_channel
        if request.param == "redis":
            channel.client.flushdb()
        else:
            # Purged, not deleted: a producer that declared the queue earlier in this
            # process does not declare it again, and RabbitMQ drops what no queue receives.
            with contextlib.suppress(Exception):  # never declared in this vhost yet: nothing to purge
                channel.queue_purge("celery")
    return url


def _worker_on(settings, url):
    from celery.contrib.testing.worker import start_worker

    from aihummer.celery import app
    from aihummer.tests.brokers import point_app_at

    settings.CELERY_BROKER_URL = url
    point_app_at(url)
    try:
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, loglevel="WARNING"):
            yield app
    finally:
        point_app_at(None)


@pytest.fixture
def broker(settings, broker_url):
    """`enqueue` sends to this test's own broker (Redis, then RabbitMQ), emptied first;
    no worker here."""
    from aihummer.tests.brokers import point_app_at

    settings.CELERY_BROKER_URL = broker_url
    point_app_at(broker_url)
    yield broker_url
    point_app_at(None)


@pytest.fixture
def worker_on_redis(settings, redis_url):
    """A real Celery worker (threads pool) on this xdist worker's own Redis database;
    `enqueue` sends to it while the fixture is active."""
    yield from _worker_on(settings, redis_url)


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch):
    """Headless Chromium through Playwright's sync API, for one test. That API runs an
    event loop in this thread while the test uses the ORM, so Django's async-safety
    check is relaxed for this test only (set at import, it would be off for the whole
    suite)."""
    import shutil

    from playwright.sync_api import sync_playwright

    from aihummer.tests.browser import CHROMIUM_ARGS

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Chromium is not installed: `make test` installs it (bin/ensure-browser).")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            # While that loop runs, Django keeps this thread's connections apart (asgiref's
            # thread-critical Local is a context variable under a running loop): what the
            # test opened there is closed now, while it is still visible, or it would stay
            # open until the next browser test (or the end: "test database being accessed
            # by other users" when it is dropped).
            connections.close_all()
