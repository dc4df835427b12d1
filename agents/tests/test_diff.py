"""The word diff reviewers read: lines first, words only inside changed lines, and a
cap on what is compared word by word (shown whole, and said so, beyond it)."""

from __future__ import annotations

from agents.diff import MAX_WORD_PAIRS, snapshot_diff, word_diff
from agents.snapshot import normalize_snapshot


def test_only_the_changed_word_of_a_changed_line_is_marked():
    pieces = word_diff(
        "Un plan en trois points.\nAucun chiffre.\n", "Un plan en deux points.\nAucun chiffre.\nSources.\n"
    )

    assert pieces == [
        ("equal", "Un plan en "),
        ("delete", "trois"),
        ("insert", "deux"),
        ("equal", " points.\nAucun chiffre.\n"),
        ("insert", "Sources.\n"),
    ]
    assert not pieces.coarse


def test_a_one_word_edit_in_a_long_line_is_marked_word_by_word():
    words = [f"w{i}" for i in range(4_000)]  # one 20 000-character line
    edited = [*words[:2_000], "CHANGED", *words[2_001:]]

    pieces = word_diff(" ".join(words), " ".join(edited))

    assert [(op, text) for op, text in pieces if op != "equal"] == [("delete", "w2000"), ("insert", "CHANGED")]
    assert not pieces.coarse
    assert "".join(text for op, text in pieces if op != "insert") == " ".join(words)


def test_a_passage_too_long_to_compare_is_shown_whole_and_flagged():
    before = " ".join(f"a{i}" for i in range(600))
    after = " ".join(f"b{i}" for i in range(600))
    assert MAX_WORD_PAIRS < 600 * 600

    pieces = word_diff(f"Intro.\n{before}\nEnd.\n", f"Intro.\n{after}\nEnd.\n")

    assert pieces == [("equal", "Intro.\n"), ("delete", f"{before}\n"), ("insert", f"{after}\n"), ("equal", "End.\n")]
    assert pieces.coarse


def test_the_snapshot_diff_says_when_a_change_is_shown_whole():
    base = normalize_snapshot({"identity": {"name": "A"}, "sections": [{"key": "s", "body": "x"}]})
    short = normalize_snapshot({"identity": {"name": "A"}, "sections": [{"key": "s", "body": "y"}]})
    long = normalize_snapshot(
        {"identity": {"name": "A"}, "sections": [{"key": "s", "body": " ".join(f"w{i}" for i in range(600))}]}
    )
    other = normalize_snapshot(
        {"identity": {"name": "A"}, "sections": [{"key": "s", "body": " ".join(f"v{i}" for i in range(600))}]}
    )

    assert not snapshot_diff(base, short).coarse
    assert snapshot_diff(long, other).coarse
