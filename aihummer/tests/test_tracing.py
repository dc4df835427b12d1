"""Issue 34: OpenTelemetry traces exported over OTLP/HTTP to a local stand-in collector:
the request that starts a run, the run's span, a span per step and per model call
with the GenAI conventions' attributes, in one tree whose trace id is the run's id."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from aihummer import telemetry
from aihummer.tests.factories import make_fan_out
from aihummer.tests.otlp_receiver import OtlpReceiver
from workflows.models import StepRun, WorkflowRun
from workflows.services import workflow_run_wait

SERVER, CLIENT = 2, 3  # OTLP span kinds


@pytest.fixture
def receiver():
    with OtlpReceiver() as receiver:
        telemetry.configure(
            service_name="aihummer-tests", exporter=OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces")
        )
        try:
            yield receiver
        finally:
            telemetry.shut_down()


@pytest.fixture
def fan(workspace):
    return make_fan_out(workspace)


def test_tracing_is_off_without_an_endpoint(settings):
    assert settings.AIHUMMER_TRACING is False
    assert telemetry.enabled() is False
    assert telemetry.model_call(object(), object()) is telemetry.NOTHING
    assert telemetry.step_span(run_id="x", step="s", agent_key="a", attempt=1) is telemetry.NOTHING


@pytest.mark.django_db(transaction=True)
def test_a_run_is_one_trace_request_run_steps_and_model_calls(receiver, worker_on_redis, client, fan):
    response = client.post(
        "/v1/admin/workflows/fan/runs",
        {"message": "go"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {fan}"},
    )
    assert response.status_code == 202, response.content
    run = workflow_run_wait(run=WorkflowRun.objects.get(pk=response.json()["id"]), timeout=30)
    assert run.status == "completed", run.error
    telemetry.flush()

    spans = {span.span_id: span for span in receiver.spans}
    trace_id = run.pk.hex
    in_run = [span for span in spans.values() if span.trace_id == trace_id]
    [run_span] = [span for span in in_run if span.name == "run fan"]
    steps = [span for span in in_run if span.name.startswith("step ")]
    calls = [span for span in in_run if span.name == "chat echo-1"]
    [request] = [span for span in spans.values() if span.name == "POST v1:workflow-runs"]

    # The tree: run → its three steps → one model call each.
    assert run_span.parent_id == "" and run_span.span_id == f"{telemetry.run_span_id(run.pk):016x}"
    assert sorted(span.name for span in steps) == ["step join", "step left", "step right"]
    assert {span.parent_id for span in steps} == {run_span.span_id}
    assert sorted(spans[call.parent_id].name for call in calls) == ["step join", "step left", "step right"]
    assert len(in_run) == 7
    # Within the run's life (the last step's span closes just after the run's end commits).
    assert all(run_span.start_ns <= span.start_ns < run_span.end_ns for span in steps)
    assert all(span.end_ns <= run_span.end_ns + 500_000_000 for span in steps)

    assert run_span.attributes | {"aihummer.workspace": "acme"} == {
        "aihummer.run.id": str(run.pk),
        "aihummer.workflow.key": "fan",
        "aihummer.workflow.version": 1,
        "aihummer.workspace": "acme",
        "aihummer.run.status": "completed",
        "gen_ai.usage.input_tokens": run.input_tokens,
        "gen_ai.usage.output_tokens": run.output_tokens,
    }
    left = StepRun.objects.get(run=run, name="left")
    [left_call] = [call for call in calls if spans[call.parent_id].name == "step left"]
    assert left_call.kind == CLIENT
    assert left_call.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "echo",
        "gen_ai.system": "echo",
        "gen_ai.request.model": "echo-1",
        "gen_ai.request.temperature": 1.0,
        "gen_ai.request.top_p": 0.95,
        "gen_ai.usage.input_tokens": left.input_tokens,
        "gen_ai.usage.output_tokens": left.output_tokens,
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.response.model": "echo-1",
    }
    assert spans[left_call.parent_id].attributes == {
        "aihummer.run.id": str(run.pk),
        "aihummer.step.name": "left",
        "aihummer.step.attempt": 1,
        "gen_ai.agent.name": "left",
    }

    # The request that started it: a server span of its own trace, linked to the run's.
    assert request.kind == SERVER and request.service == "aihummer-tests"
    assert request.attributes["http.route"] == "v1:workflow-runs"
    assert request.attributes["http.response.status_code"] == 202
    assert request.attributes["aihummer.run.id"] == str(run.pk)
    assert request.links == [(trace_id, run_span.span_id)]


@pytest.mark.django_db
def test_a_request_continues_the_callers_trace(receiver, client):
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

    client.get("/healthz", headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"})
    telemetry.flush()

    [span] = [span for span in receiver.spans if span.name == "GET healthz"]
    assert (span.trace_id, span.parent_id) == (caller_trace, caller_span)
    assert span.attributes == {
        "http.request.method": "GET",
        "url.path": "/healthz",
        "url.scheme": "http",
        "http.route": "healthz",
        "http.response.status_code": 200,
    }
