from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segviz.records import (
    Record,
    RecordError,
    detokenize,
    format_e2e_mr,
    parse_e2e_mr,
    parse_webnlg_triple,
    parse_webnlg_triples,
    split_camel,
    tokenize,
)


def test_parse_e2e_mr():
    rs = parse_e2e_mr("name[The Eagle], eatType[coffee shop], customer rating[5 out of 5]")
    assert rs == [Record("name", "The Eagle"), Record("eatType", "coffee shop"), Record("customer rating", "5 out of 5")]
    assert rs[2].tokens == ["customer", "rating", "5", "out", "of", "5"]
    assert rs[1].tokens == ["eat", "type", "coffee", "shop"]


@pytest.mark.parametrize(
    "mr,piece",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("name[The Eagle", "unbalanced"),
        ("name]The Eagle[", "cannot parse"),
        ("[The Eagle]", "empty attribute"),
        ("name[]", "empty value for attribute 'name'"),
        ("name[A], name[B]", "duplicate attribute 'name'"),
        ("name[A] food[B]", "expected ','"),
        ("name[A],", "trailing"),
    ],
)
def test_malformed_mr_names_the_piece(mr, piece):
    with pytest.raises(RecordError, match=piece):
        parse_e2e_mr(mr)


def test_webnlg_triples():
    r = parse_webnlg_triple("Abilene_Regional_Airport | cityServed | Abilene,_Texas")
    assert (r.subject, r.attribute, r.value) == ("Abilene_Regional_Airport", "cityServed", "Abilene,_Texas")
    assert r.tokens == ["abilene", "regional", "airport", "city", "served", "abilene", ",", "texas"]
    assert parse_webnlg_triple('X | runwayLength | "3500.0"').value_tokens == ["3500.0"]
    with pytest.raises(RecordError, match="3 parts"):
        parse_webnlg_triple("a | b")
    with pytest.raises(RecordError, match="empty predicate"):
        parse_webnlg_triple("a |  | c")
    with pytest.raises(RecordError, match="no triples"):
        parse_webnlg_triples([])
    with pytest.raises(RecordError, match="duplicate triple"):
        parse_webnlg_triples(["a | b | c", "a | b | c"])


def test_tokenise_and_detokenise():
    assert tokenize("Prices are £30, isn't it?") == ["prices", "are", "£", "30", ",", "isn't", "it", "?"]
    assert split_camel("customerRating_x") == "customer Rating x"
    toks = tokenize("the vaults is a family-friendly pub near café adriatic. it costs £20-25.")
    rs = parse_e2e_mr("name[The Vaults], near[Café Adriatic]")
    assert detokenize(toks, rs) == "The Vaults is a family-friendly pub near Café Adriatic. It costs £20-25."


def test_a_value_with_underscores_gets_its_case_back_as_typed():
    """Session 25: E2E reads "food[_Thai_]" as typed ("_thai_"), and the text said "_thai_"."""
    rs = parse_e2e_mr("name[Blue Spice], food[_Thai_]")
    assert detokenize(tokenize("blue spice serves _thai_ food ."), rs) == "Blue Spice serves _Thai_ food."
    webnlg = parse_webnlg_triples(["Alan_Bean | birthPlace | Wheeler,_Texas"])
    assert detokenize(tokenize("alan bean was born in wheeler , texas ."), webnlg) == "Alan Bean was born in Wheeler, Texas."


def test_a_number_with_an_exponent_is_one_token():
    """Session 22: "4.34192e+07" (WebNLG's celestial bodies) is one word, copied whole, not
    "4.34192 e + 07"; a number before a word stays apart ("3 rd", "2014 e")."""
    assert tokenize("Its period is 4.34192E+07 and 6.5e-3, 1e5.") == ["its", "period", "is", "4.34192e+07", "and", "6.5e-3", ",", "1e5", "."]
    assert tokenize("the 3rd in 2014e") == ["the", "3", "rd", "in", "2014", "e"]
    assert detokenize(tokenize("It is 6.5e+11 km.")) == "It is 6.5e+11 km."


_attr = st.text(alphabet=st.characters(blacklist_characters="[],", blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda s: s.strip() == s and s
)
_val = st.text(alphabet=st.characters(blacklist_characters="[]", blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20).filter(
    lambda s: s.strip() == s and s
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_attr, _val, min_size=1, max_size=8))
def test_mr_round_trip(slots):
    records = [Record(a, v) for a, v in slots.items()]
    assert parse_e2e_mr(format_e2e_mr(records)) == records


_words = st.lists(st.from_regex(r"[a-z]{1,8}|[0-9]{1,3}|[.,!?]|£", fullmatch=True), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(_words)
def test_tokenise_detokenise_round_trip(tokens):
    """Re-tokenising detokenised text gives the same tokens back (case aside)."""
    # a digit run followed by "." + digits would merge into a number; keep such pairs apart
    text = detokenize(tokens)
    again = tokenize(text)
    joined = " ".join(tokens)
    if any(a.isdigit() and b in {".", ","} for a, b in zip(tokens, tokens[1:], strict=False)):
        assert "".join(again) == "".join(tokens)
    else:
        assert again == tokens, (joined, text)


def test_apostrophes_in_names_round_trip():
    from segviz.records import detokenize, parse_e2e_mr, tokenize

    for name in ("O'Malley's Tavern", "Baku Turkish Martyrs' Memorial", "Zizzi's", "Café Ørsted", "The 7 Lanterns"):
        assert detokenize(tokenize(name), parse_e2e_mr(f"name[{name}]")) == name
    assert tokenize("O'Malley's") == ["o'malley", "'s"]

def test_values_keep_their_own_spacing():
    """A whole value is written as the input writes it, spacing too: "24/7", not "24 / 7" (the
    E2E checker reads the name as written, so a spaced one was "missing"), in the text and in
    the app's display alike."""
    from segviz.records import detokenize, parse_e2e_mr, parse_webnlg_triples, tokenize
    from segviz.viz import display_text

    for name in ("O'Malley's 24/7 Diner", "The AC/DC Bar", "Bar 2:30"):
        rs = parse_e2e_mr(f"name[{name}], area[riverside]")
        tokens = tokenize(f"{name} is in the riverside area .")
        assert detokenize(tokens, rs) == display_text(tokens, rs) == f"{name} is in the riverside area."
    webnlg = parse_webnlg_triples(['Acharya_Institute | president | "B.M. Reddy"', "United_States | capital | Washington,_D.C."])
    tokens = tokenize("its president is b.m. reddy and the capital is washington , d.c. , where")
    assert detokenize(tokens, webnlg) == "Its president is B.M. Reddy and the capital is Washington, D.C., where"
    # a value's own stop ends no sentence, and a stop after it is written once
    tokens = tokenize("the capital is washington , d.c. and it is big . the capital is washington , d.c. . it is big .")
    text = "The capital is Washington, D.C. and it is big. The capital is Washington, D.C. It is big."
    assert detokenize(tokens, webnlg) == display_text(tokens, webnlg) == text
    # a value's own stop after a number ends its sentence, after a word it does not (session 38)
    campus = parse_webnlg_triples(['Acharya_Institute | campus | "In Soldevanahalli, Bangalore – 560090."'])
    tokens = tokenize("it is in soldevanahalli , bangalore – 560090 . it has 700 students .")
    assert detokenize(tokens, campus) == display_text(tokens, campus) == "It is In Soldevanahalli, Bangalore – 560090. It has 700 students."
    acm = parse_webnlg_triples(['ACM_Transactions_on_Information_Systems | abbreviation | "ACM Trans. Inf. Syst."'])
    tokens = tokenize("it is abbreviated to acm trans . inf . syst . and has a code .")
    assert detokenize(tokens, acm) == "It is abbreviated to ACM Trans. Inf. Syst. and has a code."
    assert detokenize(tokenize("it is open 24 / 7 ."), parse_e2e_mr("name[The Mill]")) == "It is open 24 / 7."  # not a value
    assert tokenize("the kids' menu") == ["the", "kids'", "menu"]


def test_a_dotted_capital_i_is_written_whole():
    """Python lower-cases "İ" to "i" and a combining dot, which the tokeniser splits off ("i",
    "̇", "stanbulspor"); the text wrote that as "i ̇ stanbulspor a. Ş.", which the checker could
    not read as ``İstanbulspor_A.Ş.`` (session 43). A whole value is now written as the input
    writes it, and elsewhere the dot stays in its word."""
    from segviz import faithfulness
    from segviz.viz import display_text

    rs = parse_webnlg_triples(["John_van_den_Brom | club | İstanbulspor_A.Ş.", "Atatürk_Monument_(İzmir) | location | İzmir"])
    tokens = tokenize("john van den brom played for İstanbulspor A.Ş. near the atatürk monument ( İzmir ) .")
    assert tokens[5:9] == ["for", "i", "\u0307", "stanbulspor"]
    text = "John van den Brom played for İstanbulspor A.Ş. near the Atatürk Monument (İzmir)."
    assert detokenize(tokens, rs) == display_text(tokens, rs) == text
    assert faithfulness.check("webnlg", rs[:1], text).missing == 0
    assert detokenize(tokenize("in İzmir .")) == "In i\u0307zmir."
    # a value inside another keeps its case where they share the dotted I (helper review)
    assert detokenize(tokenize("x big İzmir port ."), parse_webnlg_triples(["X_Big_İzmir | location | İzmir_Port"])) == "X Big İzmir Port."
