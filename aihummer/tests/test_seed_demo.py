from io import StringIO

from django.apps import apps
from django.core.management import call_command
from django.urls import reverse

from agents.models import Agent, AgentTurn, PromptVersion
from aihummer.actors import Actor, Verb
from aihummer.models import User, Workspace


def row_counts() -> dict[str, int]:
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


def test_seed_demo_twice_changes_nothing_the_second_time(db, capsys, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("seed_demo")
    first_output = capsys.readouterr().out
    counts = row_counts()

    call_command("seed_demo")
    second_output = capsys.readouterr().out

    assert row_counts() == counts
    assert "shown once: ahk_" in first_output
    assert "API key 'demo-cli' exists" in second_output
    # The same passwords are printed again, and they work.
    for username in ("admin", "bob", "alice"):
        line = next(line for line in second_output.splitlines() if f" {username} " in line)
        assert line in first_output
        assert User.objects.get(username=username).check_password(line.split("password: ")[1])


def test_seed_demo_gives_each_person_the_documented_rights(db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("seed_demo")
    demo = Workspace.objects.get(slug="demo")

    def verbs(username: str) -> set[Verb]:
        actor = Actor.for_user(User.objects.get(username=username))
        return {verb for verb in Verb if actor.can(verb, demo)}

    assert verbs("admin") == set(Verb)
    assert Verb.DECIDE in verbs("bob") and Verb.PUBLISH not in verbs("bob")
    assert Verb.PROPOSE in verbs("alice") and Verb.DECIDE not in verbs("alice")


def test_the_demo_support_agent_proposed_its_own_edit_in_a_real_turn(db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())

    support = Agent.objects.get(key="support")
    proposal = PromptVersion.objects.get(agent=support, status="pending", source="agent:support")
    turn = AgentTurn.objects.get(agent=support)
    first_call = turn.debug_logs.get(sequence=1)
    assert support.allowed_tool_names == ["propose_persona_edit"]
    assert (proposal.source, proposal.reason) == ("agent:support", "Les clients trouvent mes réponses trop formelles.")
    assert proposal.proposed_by.username == "alice"  # the agent acted on alice's behalf
    assert (turn.status, turn.provider_name) == ("succeeded", "echo")
    assert [(c["name"], c["outcome"]) for c in first_call.tool_calls] == [("propose_persona_edit", "ran")]


def test_the_logins_are_not_buried_under_the_demos_review_emails(transactional_db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    out = StringIO()

    call_command("seed_demo", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Demo workspace 'demo' is ready.")
    assert not [line for line in lines if line.startswith(("Subject:", "From:", "Message-ID:"))]
    assert lines[-1] == "  (4 review e-mails of the demo's own proposals were not sent.)"


def test_seed_demo_counts_the_four_agents_it_made(db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    out = StringIO()

    call_command("seed_demo", stdout=out)

    keys = sorted(Agent.objects.filter(workspace__slug="demo").values_list("key", flat=True))
    assert keys == ["critique", "lecteur", "redacteur", "support"]
    assert "  4 agents, default preset 'echo'." in out.getvalue().splitlines()


def test_the_demo_desk_speaks_french_to_its_people_whatever_the_browser(client, db, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("seed_demo")
    assert set(User.objects.values_list("language", flat=True)) == {"fr"}
    client.force_login(User.objects.get(username="bob"))

    page = client.get(reverse("admin:index"), headers={"accept-language": "en-US"}).content.decode()

    assert "File de relecture" in page and "Review queue" not in page
