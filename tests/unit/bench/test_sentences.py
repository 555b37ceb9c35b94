"""The n-longest-sentences signature of `bench.bench_sentences` (seed 001, Baidu's method)."""

from __future__ import annotations

from bench.bench_sentences import families, longest_sentences, signature, signature_matches

BODY = (
    "The council approved the new budget after a long debate on Tuesday. "
    "Spending on schools rises by four percent. Roads get less. "
    "The mayor said the vote showed that the city can still agree on priorities!"
)


def test_the_longest_sentences_are_chosen_normalised_and_in_a_fixed_order() -> None:
    assert longest_sentences(BODY, 3) == [
        "the mayor said the vote showed that the city can still agree on priorities",
        "the council approved the new budget after a long debate on tuesday",
        "spending on schools rises by four percent",
    ]
    assert longest_sentences("一句话。第二句话比较长一些！短", 2) == [
        "第二句话比较长一些",
        "一句话",
    ]
    assert longest_sentences("Only one sentence here.", 3) == []
    assert longest_sentences(BODY, 3, min_chars=50) == []


def test_a_copy_wrapped_in_boilerplate_keeps_its_signature_and_an_edit_changes_it() -> None:
    wrapped = "Home | News | Login\n" + BODY + "\nShare this. Copyright 2024 Example Media."
    edited = BODY.replace("long debate", "short debate")
    reordered = (
        "Roads get less. The mayor said the vote showed that the city can still agree on "
        "priorities! Spending on schools rises by four percent. The council approved the new "
        "budget after a long debate on Tuesday."
    )
    assert signature(wrapped, 3) == signature(BODY, 3) is not None
    assert signature(edited, 3) != signature(BODY, 3)
    assert signature(reordered, 3) == signature(BODY, 3)


def test_each_document_matches_the_first_earlier_one_with_its_signature() -> None:
    longer = BODY + " A new sentence, longer than any of the body's own, leads the signature now."
    texts = [BODY, "Something else. Entirely different. Three sentences.", longer, BODY + " Ok."]
    assert signature_matches(texts, 3) == [None, None, None, 0]  # a short addition is ignored


def test_copies_of_copies_belong_to_their_base_document() -> None:
    records = [
        {"id": "a", "parent": None},
        {"id": "b", "parent": "a"},
        {"id": "c", "parent": "b"},
        {"id": "d", "parent": None},
    ]
    assert families(records) == ["a", "a", "a", "d"]
