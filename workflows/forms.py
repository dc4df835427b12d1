"""Forms of the workflows desk: the definition editor's JSON field and "Start a run"."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_lazy

from aihummer.jsonsafe import UnsafeJSON, parse, storable_problem

STEP_LOCATION = re.compile(r"^steps\[([0-9]+)\]([^:\s]*):")


class DefinitionField(forms.JSONField):
    """JSON shown indented, and a syntax error that says where it is (the definition
    editor, a run's inputs)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "widget", forms.Textarea(attrs={"rows": 24, "cols": 100, "class": "aih-code", "spellcheck": "false"})
        )
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled or not isinstance(value, str) or not value.strip():
            return super().to_python(value)
        # Hostile JSON (1e999, NaN, deep nesting, NUL, lone surrogates) is a field
        # error here like a syntax error, never a 500 further on.
        try:
            parsed = parse(value)
        except UnsafeJSON as exc:
            raise ValidationError(str(exc), code="invalid") from None
        problem = storable_problem(parsed)
        if problem:
            raise ValidationError(problem, code="invalid")
        return parsed

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Django re-parses what was typed to show it again: with `json.loads`, which
        # recurses on deep nesting, and back to text that may not encode. Hostile
        # input comes back exactly as typed instead.
        if self.disabled or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            parsed = parse(data)
        except UnsafeJSON:
            return forms.fields.InvalidJSONInput(data)
        return forms.fields.InvalidJSONInput(data) if storable_problem(parsed) else parsed

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if value is None:
            return ""  # an empty box, not "null"
        return json.dumps(value, ensure_ascii=False, indent=2, cls=self.encoder)


def locate_problems(definition: Any, problems: list[str]) -> list[str]:
    """Definition problems with the step each one concerns named after its path:
    `steps[1].input_mapping.text (step 'critique'): …`."""
    steps = definition.get("steps") if isinstance(definition, dict) else None
    located = []
    for problem in problems:
        match = STEP_LOCATION.match(problem)
        index = int(match.group(1)) if match else None
        step = steps[index] if index is not None and isinstance(steps, list) and index < len(steps) else None
        name = step.get("name") if isinstance(step, dict) else None
        if isinstance(name, str) and name.strip():
            step_name = gettext("step '%(name)s'") % {"name": name}
            problem = f"{match.group(0)[:-1]} ({step_name}):{problem[match.end() :]}"
        located.append(problem)
    return located


class RunStartForm(forms.Form):
    message = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 5, "cols": 100, "style": "width: 100%; box-sizing: border-box"}),
        label=gettext_lazy("Message"),
        help_text=gettext_lazy(
            "The run's message: $.inputs.message, and what a step with an empty input_mapping receives."
        ),
    )
    inputs = DefinitionField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 100, "class": "aih-code", "spellcheck": "false"}),
        label=gettext_lazy("Inputs"),
        help_text=gettext_lazy(
            'Optional JSON object of further inputs, read as $.inputs.<name>, e.g. {"tone": "formel"}.'
        ),
    )

    def clean_inputs(self) -> dict | None:
        inputs = self.cleaned_data.get("inputs")
        if inputs in (None, ""):
            return None
        if not isinstance(inputs, dict):
            raise ValidationError(gettext('Give the inputs as a JSON object, e.g. {"message": "…"}.'))
        return inputs

    def clean_message(self) -> str | None:
        message = self.cleaned_data.get("message") or ""
        return message if message.strip() else None  # blank: no message, not an empty one

    def clean(self) -> dict:
        data = super().clean()
        if not self.errors and data.get("message") is None and not data.get("inputs"):
            raise ValidationError(gettext("Give a message, JSON inputs, or both."))
        return data
