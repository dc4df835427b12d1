"""Issue 24, item 2: a secret goes only where someone who manages credentials sent it,
and only to the hosts its credential allows — over REST, the admin and every call that
sends it (a test turn here; `preset_api_key` is the one place a secret is decrypted)."""

from __future__ import annotations

import pytest

from agents.models import Credential, Preset
from agents.services import agent_create, credential_create, credential_update, preset_create
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset
from workflows.tests.fake_openai import FakeOpenAI

SECRET = "sk-vault-0123456789abcdef"
OTHER_SECRET = "sk-other-fedcba9876543210"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def vendor_preset(workspace, ada):
    """`gpt`: the vendor's API with the `openai` credential, as a workspace admin set it."""
    preset = vault_preset(
        workspace, secret=SECRET, key="gpt", name="GPT", credential_key="openai", model="gpt-4.1-mini", by=ada
    )
    credential_create(workspace=workspace, key="other", secret=OTHER_SECRET, actor=Actor.for_user(ada))
    return preset


@pytest.fixture
def publisher(api_as, make_key, ada):
    return api_as(make_key("read,write,publish", owner=ada))


def test_a_publish_key_may_not_point_a_credential_at_its_own_server(vendor_preset, publisher, server):
    redirected = publisher.patch("/v1/admin/presets/gpt", {"base_url": server.base_url, "model": "fake-model"})
    swapped = publisher.patch("/v1/admin/presets/gpt", {"credential": "other"})
    created = publisher.post(
        "/v1/admin/presets",
        {
            "key": "mine",
            "name": "Mine",
            "provider_name": "openai",
            "model": "m",
            "base_url": server.base_url,
            "credential": "other",
        },
    )

    message = (
        "Sending credential 'openai' to 127.0.0.1 needs the right to manage credentials. "
        "API keys may not do managing members, keys and credentials: only people decide and manage."
    )
    assert (redirected.status_code, redirected.json()["error"]["message"]) == (403, message)
    assert swapped.status_code == created.status_code == 403
    assert "credential 'other' to api.openai.com" in swapped.json()["error"]["message"]
    preset = Preset.objects.get(key="gpt")
    assert (preset.base_url, preset.credential.key, Preset.objects.count()) == ("", "openai", 1)


def test_a_publish_key_still_changes_what_sends_no_secret_elsewhere(vendor_preset, publisher, server):
    tuned = publisher.patch("/v1/admin/presets/gpt", {"temperature": 0.3, "name": "GPT froid"})
    keyless = publisher.post(
        "/v1/admin/presets",
        {"key": "local", "name": "Local", "provider_name": "openai", "model": "m", "base_url": server.base_url},
    )

    assert (tuned.status_code, tuned.json()["temperature"]) == (200, 0.3)
    assert keyless.status_code == 201


def test_an_admin_points_a_credential_only_at_the_hosts_it_allows(vendor_preset, api_as, ada, server):
    admin = api_as(ada)
    hosts = admin.patch("/v1/admin/credentials/openai", {"allowed_hosts": ["api.openai.com", "*.openai.azure.com"]})
    refused = admin.patch("/v1/admin/presets/gpt", {"base_url": server.base_url, "model": "fake-model"})
    azure = admin.patch("/v1/admin/presets/gpt", {"base_url": "https://acme.openai.azure.com/v1", "model": "m"})
    bad = admin.patch("/v1/admin/credentials/openai", {"allowed_hosts": ["https://evil.example/"]})

    assert (hosts.status_code, hosts.json()["allowed_hosts"]) == (200, ["api.openai.com", "*.openai.azure.com"])
    assert refused.status_code == 422
    assert refused.json()["error"]["fields"] == {
        "base_url": ["Credential 'openai' may be sent only to api.openai.com, *.openai.azure.com, not to 127.0.0.1."]
    }
    assert azure.status_code == 200
    assert bad.status_code == 422
    assert list(bad.json()["error"]["fields"]) == ["allowed_hosts"]
    assert Credential.objects.get(key="openai").allowed_hosts == ["api.openai.com", "*.openai.azure.com"]


def test_hosts_narrowed_after_the_fact_keep_the_secret_home(vendor_preset, workspace, ada, api_as, server):
    admin = Actor.for_user(ada)
    local = preset_create(
        workspace=workspace,
        actor=admin,
        key="local",
        name="Local",
        provider_name="openai",
        model="fake-model",
        base_url=server.base_url,
        credential=vendor_preset.credential,
    )
    agent_create(
        workspace=workspace,
        actor=admin,
        key="local-writer",
        name="W",
        preset=local,
        snapshot={"system_prompt": "Tu écris."},
    )
    client = api_as(ada)
    sent = client.post("/v1/admin/agents/local-writer/test", {"message": "Bonjour"})
    credential_update(credential=vendor_preset.credential, actor=admin, allowed_hosts=["api.openai.com"])

    kept = client.post("/v1/admin/agents/local-writer/test", {"message": "Bonjour"})

    assert (sent.json()["status"], server.authorizations) == ("succeeded", [f"Bearer {SECRET}"])
    assert kept.json()["status"] == "failed"
    assert kept.json()["error"] == (
        "Credential 'openai' may not be sent to 127.0.0.1: add the host to the credential's allowed hosts, "
        "or change the preset's base URL."
    )
    assert len(server.authorizations) == 1


def test_the_admin_form_takes_the_hosts_one_per_line_and_names_a_bad_one(client, vendor_preset, ada):
    credential = vendor_preset.credential
    url = f"/admin/agents/credential/{credential.pk}/change/"
    client.force_login(ada)

    bad = client.post(url, {"name": "", "secret": "", "allowed_hosts": "api.openai.com\nhttps://evil.example/"})
    saved = client.post(url, {"name": "", "secret": "", "allowed_hosts": "api.openai.com, *.openai.azure.com\n"})

    assert bad.status_code == 200
    assert "&#x27;https://evil.example/&#x27; is not a host name" in bad.content.decode()
    assert saved.status_code == 302
    assert Credential.objects.get(pk=credential.pk).allowed_hosts == ["api.openai.com", "*.openai.azure.com"]
    assert "api.openai.com\n*.openai.azure.com</textarea>" in client.get(url).content.decode()
