"""The database holds what the recorder promises (issue 10):

- a version has its agent's workspace and sandbox flag (a composite foreign key);
- an agent's live version is one of its own versions (a composite foreign key), and an
  approved one; it is empty only while the agent has versions but none approved yet (a
  new agent waiting for its first review). Checked at commit by constraint triggers,
  because an agent and its first version are written one after the other.

PostgreSQL only: the embedded SQLite database of development runs without them.
"""

from django.db import migrations

FORWARD = """
ALTER TABLE agents_agent
    ADD CONSTRAINT agents_agent_unique_id_workspace_sandbox UNIQUE (id, workspace_id, is_sandbox);
ALTER TABLE agents_promptversion
    ADD CONSTRAINT agents_promptversion_same_workspace_and_sandbox_as_agent
    FOREIGN KEY (agent_id, workspace_id, is_sandbox) REFERENCES agents_agent (id, workspace_id, is_sandbox)
    DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE agents_promptversion ADD CONSTRAINT agents_promptversion_unique_id_agent UNIQUE (id, agent_id);
ALTER TABLE agents_agent
    ADD CONSTRAINT agents_agent_live_version_is_its_own
    FOREIGN KEY (live_version_id, id) REFERENCES agents_promptversion (id, agent_id)
    DEFERRABLE INITIALLY DEFERRED;

CREATE FUNCTION agents_check_live_version(checked_agent_id bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    agent_key text;
    live_id bigint;
BEGIN
    -- Deferred to commit: read the agent as it is now (it may have been deleted since).
    SELECT key, live_version_id INTO agent_key, live_id FROM agents_agent WHERE id = checked_agent_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF live_id IS NULL THEN
        IF NOT EXISTS (SELECT 1 FROM agents_promptversion WHERE agent_id = checked_agent_id)
           OR EXISTS (SELECT 1 FROM agents_promptversion WHERE agent_id = checked_agent_id AND status = 'approved') THEN
            RAISE EXCEPTION 'Agent % has no live version.', agent_key
                USING ERRCODE = 'check_violation', CONSTRAINT = 'agents_agent_live_version_approved';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM agents_promptversion WHERE id = live_id AND status = 'approved') THEN
        RAISE EXCEPTION 'The live version of agent % is not an approved version.', agent_key
            USING ERRCODE = 'check_violation', CONSTRAINT = 'agents_agent_live_version_approved';
    END IF;
END $$;

CREATE FUNCTION agents_agent_live_version_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM agents_check_live_version(NEW.id);
    RETURN NULL;
END $$;

CREATE FUNCTION agents_promptversion_live_version_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM agents_check_live_version(NEW.agent_id);
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER agents_agent_live_version_approved
    AFTER INSERT OR UPDATE ON agents_agent DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION agents_agent_live_version_trigger();
CREATE CONSTRAINT TRIGGER agents_promptversion_live_version_approved
    AFTER UPDATE OF status, agent_id ON agents_promptversion DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION agents_promptversion_live_version_trigger();
"""

BACKWARD = """
DROP TRIGGER agents_promptversion_live_version_approved ON agents_promptversion;
DROP TRIGGER agents_agent_live_version_approved ON agents_agent;
DROP FUNCTION agents_promptversion_live_version_trigger();
DROP FUNCTION agents_agent_live_version_trigger();
DROP FUNCTION agents_check_live_version(bigint);
ALTER TABLE agents_agent DROP CONSTRAINT agents_agent_live_version_is_its_own;
ALTER TABLE agents_promptversion DROP CONSTRAINT agents_promptversion_unique_id_agent;
ALTER TABLE agents_promptversion DROP CONSTRAINT agents_promptversion_same_workspace_and_sandbox_as_agent;
ALTER TABLE agents_agent DROP CONSTRAINT agents_agent_unique_id_workspace_sandbox;
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("agents", "0005_evidence_test_cases_runs_results")]

    operations = [migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD))]
