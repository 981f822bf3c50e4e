"""Per-segment verdicts on hand-written segmentations (segviz.faithfulness.segments)."""

from segviz.faithfulness import segment_totals, segment_verdicts
from segviz.records import parse_e2e_mr, parse_webnlg_triples, tokenize

E2E = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap], near[Café Brazil]")


def _verdicts(dataset, records, pieces):
    """``pieces``: [(text, record 1..K | None)] -> verdicts of the segmentation they spell."""
    tokens, segments = [], []
    for text, k in pieces:
        toks = tokenize(text)
        segments.append((len(tokens), len(tokens) + len(toks), k))
        tokens += toks
    return segment_verdicts(dataset, records, tokens, segments)


def test_each_segment_saying_its_own_value_is_faithful():
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a", None), ("pub", 2), ("near Café Brazil", 4), (". It is cheap .", 3)])
    assert [v.verdict for v in vs] == ["faithful"] * 5
    assert [v.own for v in vs] == [True, False, True, True, True]
    t = segment_totals(vs)
    assert (t["record_segments"], t["null_segments"], t["faithful"], t["faithful_share"]) == (4, 1, 4, 1.0)


def test_segment_saying_another_records_value():
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a pub near Café Brazil", 2), (". It is cheap .", 3)])
    assert vs[1].verdict == "other record" and vs[1].others == (4,) and vs[1].own
    assert segment_totals(vs)["other record"] == 1


def test_segment_saying_a_value_absent_from_the_input():
    vs = _verdicts("e2e", E2E, [("The Eagle is a pub", 1), ("with moderate prices", 3), ("for families", 2)])
    assert vs[1].verdict == "absent value" and not vs[1].own and vs[1].absent == ("moderate prices",)
    # a slot that is not in the input at all ("family friendly") is absent too
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a family friendly pub", 2)])
    assert vs[1].verdict == "absent value" and vs[1].absent == ("family friendly",) and vs[1].own


def test_segment_of_only_function_words_is_unrealised():
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a", 2), ("cheap", 3)])
    assert [v.verdict for v in vs] == ["faithful", "unrealised", "faithful"]
    t = segment_totals(vs)
    assert t["unrealised"] == 1 and abs(t["faithful_share"] - 2 / 3) < 1e-9


def test_function_word_segment_of_a_record_said_elsewhere_is_a_filler():
    """What the ``fillers`` switch lets the decoder write: a second segment of a record that has
    already said something. It claims nothing; the totals count it apart from record segments.
    A record's only segment of function words stays unrealised."""
    vs = _verdicts("e2e", E2E, [("The Eagle is a", 1), ("pub", 2), ("and it is", 1), ("cheap", 3), (".", 2)])
    assert [v.verdict for v in vs] == ["faithful", "faithful", "filler", "faithful", "filler"]
    t = segment_totals(vs)
    assert (t["record_segments"], t["filler"], t["faithful"], t["faithful_share"]) == (3, 2, 3, 1.0)
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a", 2), ("and", 2), ("cheap", 3)])
    assert [v.verdict for v in vs] == ["faithful", "unrealised", "unrealised", "faithful"]


def test_null_segment_stating_a_value_is_counted():
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a cheap", None), ("pub", 2)])
    assert vs[1].verdict == "other record" and vs[1].others == (3,)
    assert segment_totals(vs)["null_with_value"] == 1


def test_invented_name_is_found_through_the_input():
    recs = parse_e2e_mr("name[The Copper Kettle], near[Castle Bridge]")
    ok = _verdicts("e2e", recs, [("The Copper Kettle", 1), ("is near Castle Bridge", 2)])
    bad = _verdicts("e2e", recs, [("The Copper", 1), ("is near Castle Castle", 2)])
    assert [v.verdict for v in ok] == ["faithful", "faithful"]
    assert [v.verdict for v in bad] == ["unrealised", "unrealised"]


def test_stray_dataset_venue_is_an_absent_value():
    vs = _verdicts("e2e", E2E, [("The Eagle", 1), ("is a pub near The Vaults", 2)])
    assert vs[1].verdict == "absent value" and vs[1].absent == ("the vaults",)


WEB = parse_webnlg_triples(["Alan_Bean | birthPlace | Wheeler,_Texas", "Wheeler,_Texas | country | United_States",
                            "Alan_Bean | occupation | Test_pilot"])


def test_webnlg_chain_entity_is_not_another_record():
    vs = _verdicts("webnlg", WEB, [("Alan Bean was born in Wheeler , Texas", 1), (", in the United States .", 2),
                                   ("He was a test pilot .", 3)])
    assert [v.verdict for v in vs] == ["faithful"] * 3
    vs = _verdicts("webnlg", WEB, [("Alan Bean was born in Wheeler , Texas", 1), ("Wheeler , Texas is in the United States .", 2),
                                   ("He was a", 3), ("test pilot", None)])
    assert [v.verdict for v in vs] == ["faithful", "faithful", "unrealised", "other record"]


def test_webnlg_number_absent_from_the_input():
    recs = parse_webnlg_triples(["Alfred_Moore | birthDate | 1875"])
    vs = _verdicts("webnlg", recs, [("Alfred Moore was born in 1875", 1), ("on 12 May .", None)])
    assert vs[0].verdict == "faithful" and vs[1].verdict == "absent value" and vs[1].absent == ("12",)
    vs = _verdicts("webnlg", recs, [("Alfred Moore was born on", 1), ("Mara .", None)])
    assert vs[0].verdict == "unrealised"


def test_webnlg_a_qualifying_place_inside_the_segments_own_value_is_not_another_record():
    """The city's segment says "Austin, Texas": its own value, whose "Texas" also states
    ``state | Texas`` (the checker reads the place after a comma so), is no other record's value;
    a segment that says "Texas" on its own still is."""
    recs = parse_webnlg_triples(["Andrews_County_Airport | cityServed | Austin,_Texas", "Andrews_County_Airport | state | Texas"])
    vs = _verdicts("webnlg", recs, [("Andrews County Airport serves Austin , Texas", 1), (".", None)])
    assert [v.verdict for v in vs] == ["faithful", "faithful"]
    vs = _verdicts("webnlg", recs, [("Andrews County Airport serves Austin", 1), ("in Texas .", None)])
    assert [v.verdict for v in vs] == ["faithful", "other record"]


def test_webnlg_a_name_the_input_does_not_hold():
    """A segment that names an entity the input does not hold ("Java", an entity word of
    segviz.entities) is an "invented name", as the inspector flags it; the input's own names in the
    checker's spellings ("Indonesian" of Indonesia, "Britain" of United_Kingdom) and a possessive
    ("the state's") are not. Not a fault the rerank switch counts."""
    from segviz.rerank import SEGMENT_FAULTS

    recs = parse_webnlg_triples(["Ayam_penyet | region | Malaysia", "Ayam_penyet | country | Indonesia",
                                 "Bakewell_pudding | country | United_Kingdom"])
    vs = _verdicts("webnlg", recs, [("Ayam penyet is a dish from Malaysia and Java .", 1), ("It is Indonesian .", 2),
                                    ("Bakewell pudding is from Britain , the state 's pride .", 3)])
    assert [v.verdict for v in vs] == ["invented name", "faithful", "faithful"] and vs[0].invented == ("java",)
    vs = _verdicts("webnlg", recs, [("Ayam penyet is a dish from Malaysia", 1), ("and Java .", None), ("It comes from Indonesia .", 2)])
    assert [v.verdict for v in vs] == ["faithful", "invented name", "faithful"]
    assert segment_totals(vs)["null_with_value"] == 1 and "invented name" not in SEGMENT_FAULTS
