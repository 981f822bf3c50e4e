"""Entity words and invented names (segviz.entities, session 44)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import DATA_DIR

from segviz import entities
from segviz.records import parse_webnlg_triples, tokenize


def _example(triples: list[str], text: str) -> SimpleNamespace:
    return SimpleNamespace(records=parse_webnlg_triples(triples), target=[t.lower() for t in tokenize(text)])


def test_entity_words_are_said_almost_only_as_a_word_of_the_inputs_own_names():
    """"java" is said 3 of 3 times as a word of an input's name: an entity word; "president" 1 of
    3 times (twice of a relation): not one; "cuisine" twice only: under the count; no function
    word or figure is one."""
    examples = [
        _example(["Ayam_penyet | country | Java"], "Ayam penyet is a dish from Java."),
        _example(["Ayam_penyet | region | Java"], "Ayam penyet comes from Java."),
        _example(["Nasi_goreng | country | Java"], "Nasi goreng is from Java, 2 cuisine."),
        _example(["X | runway | 18_L"], "X has runway 18 L, L and L."),
        _example(["India | leaderTitle | President"], "The leader of India is the President."),
        _example(["B_Reddy | president | Acharya"], "B Reddy is the president of Acharya."),
        _example(["C_Rao | president | Acharya"], "C Rao is the president of Acharya cuisine."),
    ]
    words = entities.entity_words(examples, share=0.9, min_count=3)
    assert "java" in words and "ayam" not in words and "acharya" not in words  # twice only
    assert "president" not in words and "cuisine" not in words
    assert not any(w in words for w in ("is", "the", "of", "2", ".", "l"))
    assert "president" in entities.entity_words(examples, share=0.3, min_count=3)  # 1 of 3 inside


def test_invented_names_are_entity_words_the_input_does_not_hold():
    records = parse_webnlg_triples(["Alan_Shepard | almaMater | Air_Force_Institute_of_Technology",
                                    "Alan_Shepard | was selected by NASA | 1959"])
    words = frozenset({"java", "afit", "nasa", "ut", "austin", "shepard"})
    text = "Alan Shepard graduated from AFIT and UT in Austin; he was selected by NASA. Java!"
    assert entities.invented_names(records, text, words) == ["ut", "austin", "java"]
    assert entities.invented_names(records, text, frozenset()) == []
    held = entities.held_words(records)
    assert {"afit", "nasa", "shepard", "selected", "alma", "mater"} <= held  # initials, relation words


def test_a_name_said_as_the_checker_reads_it_is_held():
    """A demonym or plural ("indian" of India, "beans" of Kidney_bean), a possessive ("man's") and a
    spelling without accents ("ni" of Críona_Ní_Dhálaigh) or with them ("astérix" of Asterix) are
    the input's own names, as WebNLG's checker and the ``plurals`` / ``spellings`` rules read them."""
    records = parse_webnlg_triples(["Sumitra_Mahajan | nationality | India", "Bozo | alterEgo | Bozo_the_Iron_Man",
                                    "3Arena | owner | Críona_Ní_Dhálaigh", "Dish | ingredient | Kidney_bean",
                                    "Dish | character | Asterix_(comicsCharacter)"])
    words = frozenset({"indian", "man's", "ni", "beans", "astérix", "java", "malaysian"})
    text = "An Indian leader, Iron Man's ego, Criona Ni Dhalaigh, kidney beans, Astérix; Java and Malaysian food."
    assert entities.invented_names(records, text, words) == ["java", "malaysian"]


def test_shipped_entity_words_name_places_not_relations():
    """segviz/entities.json (``python -m segviz.entities``): WebNLG's holds "java" and
    "switzerland", not "president" or "american" (said of relations and nationalities); E2E has
    none (its checker reads names and closed sets itself)."""
    w = entities.shipped("webnlg")
    assert {"java", "switzerland", "airport", "bacon", "sausage"} <= w and 1500 < len(w) < 2000
    assert not w & {"president", "american", "city", "retired", "is", "the"}
    assert min(map(len, w)) == 2  # no single letter ("l" of runway "18 L / 36 R")
    assert entities.shipped("e2e") == frozenset()


@pytest.mark.skipif(not (DATA_DIR / "webnlg").exists(), reason="needs the WebNLG training data")
def test_shipped_entity_words_are_those_the_training_data_gives():
    from segviz.data import load_split

    examples = load_split("webnlg", "train", DATA_DIR)
    assert len(examples) == 18102
    assert frozenset(entities.entity_words(examples)) == entities.shipped("webnlg")
