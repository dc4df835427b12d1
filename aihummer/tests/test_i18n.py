"""The desk's French catalogue: every string of the project's own code has a French
translation (a new English string without one fails here), the committed .mo is the
compiled .po, and the desk's language follows the person, then the browser."""

from __future__ import annotations

import gettext
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from aihummer.management.commands.makemessages import PROJECT_IGNORES

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "fr" / "LC_MESSAGES" / "django.po"


def po_entries(path: Path) -> list[dict]:
    """The catalogue's entries (header left out): msgid, msgstr(s) and flags."""
    entries, entry, field = [], None, None
    for line in [*path.read_text().splitlines(), ""]:
        if not line.strip():
            if entry is not None and entry["msgid"]:
                entries.append(entry)
            entry, field = None, None
            continue
        if line.startswith("#~"):
            raise AssertionError(f"obsolete entry left in the catalogue: {line}")
        entry = entry or {"msgid": "", "msgstr": [], "flags": set()}
        if line.startswith("#,"):
            entry["flags"].update(flag.strip() for flag in line[2:].split(","))
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgid ", "msgid_plural ")):
            field = "msgid" if line.startswith("msgid ") else "plural"
            entry[field] = _unquote(line.split(" ", 1)[1])
        elif line.startswith("msgstr"):
            field = "msgstr"
            entry["msgstr"].append(_unquote(line.split(" ", 1)[1]))
        elif line.startswith('"') and field == "msgstr":
            entry["msgstr"][-1] += _unquote(line)
        elif line.startswith('"') and field is not None:
            entry[field] += _unquote(line)
    return entries


def _unquote(text: str) -> str:
    return text.strip()[1:-1].replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def test_the_french_catalogue_translates_every_string_of_the_project(tmp_path: Path, monkeypatch) -> None:
    # Given a copy of the sources and of the committed catalogue (makemessages rewrites
    # the catalogue in place: the real one stays untouched)
    base = Path(settings.BASE_DIR)
    copy = tmp_path / "src"
    shutil.copytree(base, copy, ignore=shutil.ignore_patterns(*PROJECT_IGNORES, ".git", "__pycache__", "*.mo"))
    committed = {entry["msgid"] for entry in po_entries(CATALOGUE)}
    monkeypatch.chdir(copy)

    # When the strings are extracted again, as `manage.py makemessages -l fr` does
    with override_settings(LOCALE_PATHS=[copy / "locale"]):
        call_command("makemessages", locale=["fr"], verbosity=0)

    # Then every one of them is in the committed catalogue, translated and not fuzzy
    extracted = po_entries(copy / "locale" / "fr" / "LC_MESSAGES" / "django.po")
    assert sorted({entry["msgid"] for entry in extracted} - committed) == [], "run makemessages -l fr"
    assert sorted(committed - {entry["msgid"] for entry in extracted}) == [], "strings no code uses any more"
    untranslated = [entry["msgid"] for entry in extracted if not all(entry["msgstr"])]
    assert untranslated == []
    fuzzy = [entry["msgid"] for entry in extracted if "fuzzy" in entry["flags"]]
    assert fuzzy == []


def test_the_committed_mo_is_the_compiled_catalogue(tmp_path: Path) -> None:
    compiled = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "--check", "-o", str(compiled), str(CATALOGUE)], check=True)
    with compiled.open("rb") as fresh, CATALOGUE.with_suffix(".mo").open("rb") as committed:
        assert gettext.GNUTranslations(committed)._catalog == gettext.GNUTranslations(fresh)._catalog, (
            "run make messages"
        )


@pytest.mark.parametrize("path", ["/healthz", "/v1/me"])
def test_the_api_and_probes_stay_in_english_whatever_the_browser(client, path: str) -> None:
    response = client.get(path, headers={"accept-language": "fr"})
    assert "Content-Language" not in response.headers
