"""N-best reranking by the automatic checker: the ``rerank`` decoding switch (issue 11).

The beam ends with several finished texts; the model's best is not always the most faithful.
With ``rerank`` on, the decoder keeps its n-best list and returns the first candidate (in the
model's order) with the fewest faults, where a fault is an error of the record-level checker
(wrong, repeated, missing, hallucinated: :mod:`segviz.faithfulness`) or, for the segment model,
a segment that does not say its own record (absent value, other record, unrealised:
:func:`segviz.faithfulness.segment_verdicts`). Ties keep the model's order, so with one
faultless candidate among five the model's preference still decides between equals; with
``relations``, of the fewest faults, the fewest records said with another relation's words
(:func:`relation_faults`) come first; with ``close`` the candidate nearest the model's own free
text (the fewest word edits from it) decides instead of the model's order (:func:`word_edits`).

This is a separately named setting (docs/design.md §6): the checker is also what the stress
suites measure, so the tables report it beside the rows without it, never in their place.
"""

from __future__ import annotations

from segviz import faithfulness
from segviz.lexicon import Relations, plain_value_words, plain_word
from segviz.records import Record, entity_text, tokenize
from segviz.result import GenerationResult

SEGMENT_FAULTS = ("absent value", "other record", "unrealised")


def record_errors(dataset: str, records: list[Record], result: GenerationResult) -> int:
    """Errors of the record-level checker in ``result`` (wrong, repeated, missing, hallucinated):
    what the slot error rate counts; the ``free`` switch keeps a free text that has none."""
    return faithfulness.check(dataset, records, result.text).errors


def faults(dataset: str, records: list[Record], result: GenerationResult) -> int:
    """Checker errors of ``result`` plus its segments that do not say their own record."""
    n = record_errors(dataset, records, result)
    if result.segments:
        verdicts = faithfulness.segment_verdicts(dataset, records, result.tokens, result.segments)
        n += sum(v.verdict in SEGMENT_FAULTS for v in verdicts)
    return n


def relation_faults(records: list[Record], result: GenerationResult, relations: Relations) -> int:
    """How many records of ``result`` are said with another relation's words (:func:`misplaced_relations`)."""
    return len(misplaced_relations(records, result, relations))


def misplaced_relations(records: list[Record], result: GenerationResult, relations: Relations) -> dict[int, list[str]]:
    """Record id (1..K) -> the relation words (:func:`segviz.lexicon.relation_words`) it is said
    with that the segments of its attribute (almost) never say in training (in under 1% of
    them), in its segment or in the words that lead into its value (:func:`_lead_ins`):
    ``author`` in "... and the oclc number was Diane Duane", ``was a crew member of`` in "who was
    born in Apollo 12". Words are read by :func:`segviz.lexicon.plain_word`; words that say the
    input's values and subjects do not count (:func:`segviz.lexicon.plain_value_words`: "august"
    of a date), nor attributes the lexicon does not judge (too few training segments)."""
    judged, said = relations.get("", frozenset()), plain_value_words(records)
    words: dict[int, set[str]] = _lead_ins(records, result.tokens)
    for s, e, k in result.segments or []:
        if k:
            words.setdefault(k, set()).update(plain_word(t) for t in result.tokens[s:e])
    out = {}
    for k, ws in sorted(words.items()):
        a = records[k - 1].attribute
        if a in judged and (bad := sorted(w for w in ws - said - {""} if w in relations and a not in relations[w])):
            out[k] = bad
    return out


LEAD_IN = 6  # at most this many words before a value lead into it, none across a punctuation mark or "and"


def _lead_ins(records: list[Record], tokens: list[str]) -> dict[int, set[str]]:
    """Record id (1..K) -> the words just before the first verbatim mention of its value in
    ``tokens`` that is not part of a longer entity's mention: up to ``LEAD_IN`` of them, back to
    the nearest punctuation mark or "and" ("the oclc number was" of "... and the oclc number was
    Diane Duane") or the record's own subject ("was born in" of "Alan Bean was born in
    Wheeler"). Words that begin after another entity of the input may be about that one
    ("region" of "the Rome region of Italy" for a ``country`` record): then none. Records whose
    value is not said verbatim have none."""
    toks = [plain_word(t) for t in tokens]
    said = [(i, e) for e in {_spelled(x) for r in records for x in (r.value, r.subject or "") if x} if e
            for i in range(len(toks) - len(e) + 1) if tuple(toks[i : i + len(e)]) == e]  # fmt: skip
    held: dict[int, set[tuple]] = {}  # position -> the input entities said there
    for i, e in said:
        for j in range(i, i + len(e)):
            held.setdefault(j, set()).add(e)
    out = {}
    for k, r in enumerate(records, 1):
        v = _spelled(r.value)
        inside = {i for i, e in said if e == v and any(s <= i and i + len(v) <= s + len(o) and len(o) > len(v) for s, o in said)}
        i = min((i for i, e in said if e == v and i not in inside), default=None)
        lead = []
        while i is not None and i > 0 and len(lead) < LEAD_IN and i - 1 not in held and _leads(toks[i - 1]):
            i -= 1
            lead.append(toks[i])
        if lead and (i == 0 or i - 1 not in held or _spelled(r.subject or "") in held[i - 1]):
            out[k] = set(lead)
    return out


def _leads(word: str) -> bool:
    """Whether a lead-in goes on across ``word``: not a punctuation mark, not "and"."""
    return word != "and" and any(ch.isalnum() for ch in word)


def _spelled(entity: str) -> tuple[str, ...]:
    """An entity's words as :func:`_lead_ins` compares them (:func:`segviz.lexicon.plain_word`)."""
    return tuple(plain_word(t) for t in tokenize(entity_text(entity)))


STOPS = frozenset({".", "!", "?"})


def word_edits(tokens: list[str], own: list[str]) -> int:
    """How much ``tokens`` rewords the model's own text ``own``: the fewest words to insert, delete
    or replace (case aside) to turn one into the other (Levenshtein over words; 0 when equal),
    with the final stops set apart: the two texts are compared without them, and a text that lacks
    the stop ``own`` ends with counts one edit more. So dropping the stop never makes a text
    nearer, wherever the added words are (before session 20 a new sentence after ``own``'s stop
    was one edit nearer without its own stop); chosen on the tune half (docs/design.md §6)."""
    a, b = _unstopped([t.lower() for t in tokens]), _unstopped([t.lower() for t in own])
    prev = list(range(len(b) + 1))  # edits from a[:0] to each b[:j]
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1] + (_stopped(own) and not _stopped(tokens))


def _stopped(tokens: list[str]) -> bool:
    """Whether a text ends with a full stop (or ! or ?)."""
    return bool(tokens) and tokens[-1] in STOPS


def _unstopped(tokens: list[str]) -> list[str]:
    """``tokens`` without their final stop, if they have one."""
    return tokens[:-1] if _stopped(tokens) else tokens


def rerank(
    dataset: str,
    records: list[Record],
    candidates: list[GenerationResult],
    own: list[str] | None = None,
    relations: Relations | None = None,
) -> GenerationResult:
    """The first of ``candidates`` (best first, as the beam ranks them) with the fewest faults;
    with ``own`` (the ``close`` switch: the tokens of the model's own unconstrained text) the one
    of those the fewest word edits from it (:func:`word_edits`; ties keep the model's order). Its
    ``scores`` say which rank it had (``rerank_rank``, 0 = the model's best) and how many faults
    the model's best had (``rerank_faults_before``). With ``relations`` (the ``relations``
    switch), of the fewest faults those with the fewest :func:`relation_faults` (the next
    criterion: a weaker sign than the checker's), their counts in ``rerank_relations`` and
    ``rerank_relations_before``."""
    if not candidates:
        raise ValueError("rerank needs at least one candidate")
    counts = [faults(dataset, records, c) for c in candidates]
    fewest = [j for j, n in enumerate(counts) if n == min(counts)]
    rel = {j: relation_faults(records, candidates[j], relations) for j in {0, *fewest}} if relations else {}
    if rel:  # relations: of the fewest faults, the fewest records said with another relation's words
        fewest = [j for j in fewest if rel[j] == min(rel[f] for f in fewest)]
    edits = {j: word_edits(candidates[j].tokens, own) for j in fewest} if own is not None else {}
    i = min(fewest, key=lambda j: (edits[j], j)) if edits else fewest[0]
    best = candidates[i]
    best.scores = {**best.scores, "rerank_rank": i, "rerank_faults": counts[i], "rerank_faults_before": counts[0]}
    if relations:
        best.scores.update(rerank_relations=rel[i], rerank_relations_before=rel[0])
    if edits:
        best.scores["rerank_edits"] = edits[i]
    return best


def guided_choice(result: GenerationResult) -> str | None:
    """How the checker chose ``result``, in words for the app (from its ``rerank_*`` scores); None
    when no checker chose it (the model's own search)."""
    sc = result.scores or {}
    if sc.get("rerank_free"):
        return "The model's own unconstrained text: the checker finds that it states every record."
    if "rerank_rank" not in sc:
        return None
    n = sc.get("rerank_widened")
    pool = f"{n} candidates of the beam and a four times wider one" if n else "the beam's candidates"
    faults = sc["rerank_faults"]
    e = sc.get("rerank_edits")
    how = "the first in the model's order"
    if e is not None:  # close: "nearest the model's own text" read as the model's first (session 25)
        how = (f"the one nearest the model's own unconstrained text ({e} word edit{'' if e == 1 else 's'} from it)"
               + (", not the first in the model's order" if sc["rerank_rank"] else ""))
    if "rerank_relations" in sc:
        r = sc["rerank_relations"]
        how = (f"then the fewest values said with another relation's words ({r}; the model's first: "
               f"{sc['rerank_relations_before']}), {how}")
    return (f"Candidate {sc['rerank_rank'] + 1} of {pool}: {faults} fault{'' if faults == 1 else 's'} by the checker "
            f"(the model's first: {sc['rerank_faults_before']}); of the fewest faults, {how}.")
