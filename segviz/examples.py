"""Bundled example inputs, written for this project, so the app works without ``../shared/data``.

Also builds *tiny* random-initialised checkpoints from these examples (no data, no training):
tests and offline demos point ``$SEGVIZ_CHECKPOINTS`` at them. Their texts are nonsense, but
every code path of the app (decoding, alignment, attention, plans) runs on them in milliseconds.
"""

from __future__ import annotations

from pathlib import Path

from segviz.records import Record

__all__ = ["EXAMPLES", "examples_for", "make_tiny_checkpoints"]


def _e2e(*slots: tuple[str, str]) -> list[Record]:
    return [Record(a, v) for a, v in slots]


def _webnlg(*triples: tuple[str, str, str]) -> list[Record]:
    return [Record(attribute=p, value=o, subject=s) for s, p, o in triples]


# name -> records, per dataset (invented venues; WebNLG facts from public knowledge, and one invented airport)
EXAMPLES: dict[str, dict[str, list[Record]]] = {
    "e2e": {
        "The Golden Lantern (4 slots)": _e2e(
            ("name", "The Golden Lantern"), ("eatType", "pub"), ("food", "Italian"), ("area", "riverside")
        ),
        "Blue Heron Café (6 slots)": _e2e(
            ("name", "Blue Heron Café"),
            ("eatType", "coffee shop"),
            ("priceRange", "less than £20"),
            ("customer rating", "5 out of 5"),
            ("familyFriendly", "yes"),
            ("near", "The Old Mill"),
        ),
        "The Copper Kettle (8 slots)": _e2e(
            ("name", "The Copper Kettle"),
            ("eatType", "restaurant"),
            ("food", "French"),
            ("priceRange", "high"),
            ("customer rating", "average"),
            ("area", "city centre"),
            ("familyFriendly", "no"),
            ("near", "Riverside Gallery"),
        ),
        "Mill Street Diner (3 slots)": _e2e(
            ("name", "Mill Street Diner"), ("food", "English"), ("priceRange", "cheap")
        ),
    },
    "webnlg": {
        "Alan Bean (3 triples)": _webnlg(
            ("Alan_Bean", "nationality", "United_States"),
            ("Alan_Bean", "occupation", "Test_pilot"),
            ("Alan_Bean", "mission", "Apollo_12"),
        ),
        "Aarhus Airport (2 triples)": _webnlg(
            ("Aarhus_Airport", "cityServed", "Aarhus"),
            ("Aarhus_Airport", "runwayLength", "2776.0"),
        ),
        "Fenwick Regional Airport (5 triples, invented)": _webnlg(
            ("Fenwick_Regional_Airport", "cityServed", "Fenwick,_Ohio"),
            ("Fenwick_Regional_Airport", "elevationAboveTheSeaLevel_(in_metres)", "213.0"),
            ("Fenwick_Regional_Airport", "runwayLength", "1850.0"),
            ("Fenwick_Regional_Airport", "operatingOrganisation", "Fenwick_Aviation_Authority"),
            ("Fenwick,_Ohio", "country", "United_States"),
        ),
        "Ajoblanco (4 triples)": _webnlg(
            ("Ajoblanco", "country", "Spain"),
            ("Ajoblanco", "mainIngredients", "Bread, almonds, garlic, water, olive oil"),
            ("Spain", "leaderName", "Felipe_VI_of_Spain"),
            ("Ajoblanco", "region", "Andalusia"),
        ),
    },
}


# one reference text per bundled example (used to fit the tiny demo checkpoints)
REFERENCES: dict[str, str] = {
    "The Golden Lantern (4 slots)": "The Golden Lantern is an Italian pub in the riverside area.",
    "Blue Heron Café (6 slots)": "Blue Heron Café is a family friendly coffee shop near The Old Mill. "
    "It has a price range of less than £20 and a customer rating of 5 out of 5.",
    "The Copper Kettle (8 slots)": "The Copper Kettle is a French restaurant in the city centre near Riverside Gallery. "
    "It has a high price range and an average customer rating and is not family friendly.",
    "Mill Street Diner (3 slots)": "Mill Street Diner serves cheap English food.",
    "Alan Bean (3 triples)": "Alan Bean is a United States test pilot who was a crew member of Apollo 12.",
    "Aarhus Airport (2 triples)": "Aarhus Airport serves the city of Aarhus and has a runway length of 2776.0.",
    "Fenwick Regional Airport (5 triples, invented)": "Fenwick Regional Airport serves Fenwick, Ohio, in the United States. "
    "It is 213.0 metres above sea level, has a runway length of 1850.0 and is operated by the Fenwick Aviation Authority.",
    "Ajoblanco (4 triples)": "Ajoblanco is from the Andalusia region of Spain, where Felipe VI of Spain is the leader. "
    "Its main ingredients are bread, almonds, garlic, water, olive oil.",
}


def examples_for(dataset: str) -> dict[str, list[Record]]:
    """Bundled examples of ``dataset`` (empty for an unknown dataset)."""
    return EXAMPLES.get(dataset, {})


def make_tiny_checkpoints(
    folder: Path | str, datasets: tuple[str, ...] = ("e2e", "webnlg"), steps: int = 60, seed: int = 0
) -> Path:
    """Write tiny ``{dataset}-seg`` / ``{dataset}-pg`` checkpoints into ``folder``; returns it.

    Each model (hidden 32, embeddings 16, L 6) is fitted for ``steps`` full-batch Adam steps on
    the bundled examples and their :data:`REFERENCES` (a few seconds on one CPU core), so it
    decodes short, real-looking texts and stops. Only for tests and offline demos.
    """
    import torch

    folder = Path(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: more threads only contend with other jobs
    try:
        for dataset in datasets:
            _fit_tiny(folder, dataset, steps, seed)
    finally:
        torch.set_num_threads(threads)
    return folder


def _fit_tiny(folder: Path, dataset: str, steps: int, seed: int) -> None:
    import torch

    from segviz import checkpoint
    from segviz.data import Vocab, collate, encode
    from segviz.model import ModelConfig, build_model
    from segviz.records import tokenize

    pairs = [(recs, tokenize(REFERENCES[name])) for name, recs in examples_for(dataset).items()]
    words = sorted(
        {t for _, tgt in pairs for t in tgt} | {t for recs, _ in pairs for r in recs for t in r.tokens}
    )
    vocab = Vocab(words)
    batch = collate([encode(vocab, recs, tgt) for recs, tgt in pairs], len(vocab))
    for kind in ("seg", "pg"):
        torch.manual_seed(seed)
        cfg = ModelConfig(kind=kind, vocab_size=len(vocab), emb_dim=16, hidden=32, max_seg_len=6, dropout=0.0)
        model = build_model(cfg)
        opt = torch.optim.Adam(model.parameters(), lr=0.03)
        history = []
        for step in range(1, steps + 1):
            loss, stats = model.loss(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % (steps // 3 or 1) == 0:
                nll = stats["nll"] / max(stats["tokens"], 1)
                history.append(
                    {
                        "epoch": len(history) + 1,
                        "train_loss": loss.item(),
                        "train_nll": nll,
                        "val_nll": nll,
                        "train_exp_seg": stats["exp_seg"],
                        "train_K": stats["K"],
                        "val_exp_seg": stats["exp_seg"],
                        "val_K": stats["K"],
                    }
                )
        model.eval()
        checkpoint.save(
            folder / f"{dataset}-{kind}", model, vocab, dataset, {"tiny": True, "steps": steps}, history
        )
