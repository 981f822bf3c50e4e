"""The Plan editor's list of plans: the model's own, its beam's n-best list, sampled ones (segviz.plans)."""

from pathlib import Path

import pytest
import torch

from segviz import checkpoint, decode, plans
from segviz.records import parse_e2e_mr

E2E_SEG = Path(__file__).resolve().parent.parent / "checkpoints" / "e2e-seg"
RECORDS = parse_e2e_mr(
    "name[Blue Heron Café], eatType[coffee shop], priceRange[less than £20], customer rating[5 out of 5], "
    "familyFriendly[yes], near[The Old Mill]"
)


@pytest.fixture(scope="module")
def seg():
    if not E2E_SEG.exists():
        pytest.skip("shipped checkpoint missing")
    torch.set_num_threads(1)
    return checkpoint.load(E2E_SEG)


def test_beam_plans_are_the_n_best_with_distinct_plans(seg):
    views = plans.beam_plans("e2e", RECORDS, seg, beam=5)
    nbest = decode.generate_seg_nbest(seg.model, seg.vocab, RECORDS, "rm", 5, 5, rules=seg.rules())
    assert views[0].result.text == nbest[0].text == decode.generate_seg(
        seg.model, seg.vocab, RECORDS, "rm", 5, rules=seg.rules()
    ).text
    got = [tuple(plans.plan_of(v.result, len(RECORDS))) for v in views]
    assert len(got) == len(set(got)) >= 2  # several plans in the beam, each once
    first_of_plan = {}
    for r in nbest:  # each view is the best-ranked n-best output with its plan
        first_of_plan.setdefault(tuple(plans.plan_of(r, len(RECORDS))), r.text)
    assert [v.result.text for v in views] == [first_of_plan[p] for p in got]
    assert all(v.report is not None and v.segment_verdicts for v in views)


def test_plan_rows_name_where_each_plan_comes_from(seg):
    overview = plans.plan_overview("e2e", RECORDS, seg, beam=5, n=2)
    assert overview.beam[0] is overview.own and overview.plan == plans.plan_of(overview.own.result, len(RECORDS))
    rows = plans.plan_rows(overview, RECORDS)
    sources = {r["plan"]: r["source"] for r in rows}
    own = " → ".join(map(str, overview.plan))
    assert sources[own] == "the model's own (+RM)"
    beam_rows = [s for s in sources.values() if s.startswith("beam n-best #")]
    assert len(beam_rows) == len(overview.beam) - 1 >= 1
    per_token = [r["per token"] for r in rows]
    assert per_token == sorted(per_token, reverse=True)


def test_the_sampling_note_says_where_the_missing_sampled_rows_went(seg):
    """Four samples asked for, one distinct and that one a plan of the beam: the note says so, and
    no row reads "sampled, forced" (it said only "only 1 was distinct", and no sampled row showed)."""
    overview = plans.plan_overview("e2e", RECORDS, seg, beam=5, n=2)
    rows = plans.plan_rows(overview, RECORDS)
    assert overview.sampled_new == sum(r["source"] == "sampled, forced" for r in rows) <= overview.sampled
    own = overview.own
    note = plans.PlanOverview(own, overview.plan, [own], 4, 1, beam=[own], sampled_new=0).sampling_note()
    assert note == ("This list samples 4 plans from the transition model; 1 was distinct, and 1 of them is already a "
                    "plan of the beam (listed as such).")
    assert plans.PlanOverview(own, overview.plan, [own], 4, 3, sampled_new=3).sampling_note() == \
        "This list samples 4 plans from the transition model; 3 were distinct."
    assert plans.PlanOverview(own, overview.plan, [own], 2, 2, sampled_new=2).sampling_note() is None
    assert plans.PlanOverview(own, overview.plan, [own], 4, 0).sampling_note() == (  # not "0 were distinct"
        "None of the 4 plans asked for could be sampled from the transition model for these records.")
    # one record: one order (a user read "None of the 4 plans … could be sampled")
    assert plans.PlanOverview(own, [1], [own], 4, 0).sampling_note() == "One record has one order: there is no other plan to sample."


def test_plan_rows_name_the_words_a_webnlg_text_invents(tiny):
    """WebNLG's checker reads no fact the input does not hold, so its "checker errors" read 0 for
    a text that adds a place ("java") or a number ("1911"); the plan list names them in its
    "invented" column (session 44). E2E's rows have no such column (its checker counts them)."""
    from segviz import service
    from segviz.records import parse_webnlg_triples

    records = parse_webnlg_triples(["Ayam_penyet | region | Malaysia", "Ayam_penyet | established | 1901"])
    text = "Ayam penyet is a dish from Malaysia and Java, since 1911."
    view = service.cases_from_outputs("webnlg", [(records, text)], checkpoint.load(tiny / "webnlg-seg"), system="seg")[0].views["seg"]
    overview = plans.PlanOverview(view, [1, 2], [view], 0, 0, beam=[view])
    row = plans.plan_rows(overview, records, "webnlg")[0]
    assert row["checker errors"] == 1 and row["invented"] == "1911, java"  # 1901 is missing; the rest unseen by the checker
    clean = service.cases_from_outputs("webnlg", [(records, "Ayam penyet is from Malaysia, since 1901.")],
                                       checkpoint.load(tiny / "webnlg-seg"), system="seg")[0].views["seg"]
    assert plans.plan_rows(plans.PlanOverview(clean, [1, 2], [clean], 0, 0, beam=[clean]), records, "webnlg")[0]["invented"] == "none"
    assert "invented" not in plans.plan_rows(overview, records)[0]
    assert "invented" not in plans.plan_rows(overview, records, "e2e")[0]
