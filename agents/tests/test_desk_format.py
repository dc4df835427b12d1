from datetime import timedelta
from decimal import Decimal

from django.template import Context, Template

from agents.templatetags.desk_format import duration_ms, money


def test_money_prints_every_cost_with_the_dollar_and_six_decimals():
    assert [money(Decimal("0")), money(Decimal("0.0021")), money("12.5"), money(None)] == [
        "$0.000000",
        "$0.002100",
        "$12.500000",
        "—",
    ]


def test_duration_prints_milliseconds_seconds_or_minutes():
    assert [duration_ms(850), duration_ms(3700), duration_ms(timedelta(minutes=2, seconds=30)), duration_ms(None)] == [
        "850 ms",
        "3.7 s",
        "2.5 min",
        "—",
    ]


def test_the_filters_read_the_same_in_templates():
    text = Template("{% load desk_format %}{{ cost|money }} · {{ ms|duration_ms }}").render(
        Context({"cost": Decimal("0.000291"), "ms": 36})
    )
    assert text == "$0.000291 · 36 ms"
