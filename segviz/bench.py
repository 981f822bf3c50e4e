"""Benchmarks: what segmental decoding costs against full attention, and how it scales.

    python -m segviz.bench [--json runs/bench.json] [--threads 1] [--small] [--train-only] [--train-threads 0]
    python -m segviz.bench --app-latency [--n 10] [--json runs/latency.json]   # the app in Chromium (segviz.latency)

1. Training: one forward+backward step at batch 64 on E2E-sized batches for ``seg`` and
   ``pg``, the share of the ``seg`` step spent in the dynamic program, peak memory of each
   (peak RSS of a fresh child process that runs only that step).
   Training throughput (first): both models in one process as ``segviz.train`` steps them
   (clipping and Adam included), seg and pg alternately on the same real batches, all cores
   by default (``--train-threads``): step ms, examples/s, seg/pg ratio, projected epoch time.
2. Decoding: milliseconds per example, greedy and beam 5, ``seg`` (each constraint level) vs
   ``pg``, on E2E dev inputs with the shipped checkpoints.
3. Scaling: synthetic inputs with K records of N tokens, same hidden sizes: decoding time per
   output token for both models, the ratio ``seg/pg``, the attention part (scores + context +
   copy) of one decoding step on its own, and training step time against K.

Every figure is the median of ``--reps`` repetitions after a warm-up (3 x ``--reps`` for the
scaling part), with torch threads fixed; the scaling ratios are medians of per-repetition ratios,
seg and pg timed alternately, so a slow spell of a shared machine hits both sides. The paper's claim: ``O(M+N)`` per step for the segment
model (record choice O(M) once per segment, attention O(N) within it) against ``O(M·N)``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

# OpenMP threads that wait for work sleep instead of spinning (unless the environment says
# otherwise): on this 2-core machine shared with other jobs, a 2-thread training step was
# measured about 3x slower with spinning threads (README, "Train on a GPU / several GPUs"). Read
# when torch loads OpenMP, so it is set before the first `import torch`.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from segviz import dp
from segviz.bench_harness import (  # re-exported: how the benchmarks time and what they feed
    CHECKPOINTS,
    e2e_batches,
    median_time,
    paired_times,
    synthetic_batch,
    synthetic_records,
    synthetic_vocab,
    write_json,
)
from segviz.data import BOS_ID, Vocab, collate, encode
from segviz.decode import parse_value_rules
from segviz.model import ModelConfig, PGModel, SegmentModel, build_model

# ----- 1. training ---------------------------------------------------------------------------


def _train_step_child(kind: str, hidden: int, emb: int, threads: int, reps: int, n_batches: int, q) -> None:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    vocab, bs, source = e2e_batches(n_batches)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = build_model(ModelConfig(kind=kind, vocab_size=len(vocab), hidden=hidden, emb_dim=emb))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    it = iter(bs * (reps + 2))

    def step():
        loss, _ = model.loss(next(it))
        opt.zero_grad()
        loss.backward()
        opt.step()

    t = median_time(step, reps)
    out = {"step_ms": 1000 * t, "examples_per_s": bs[0].size / t, "batches": source,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "rss_increase_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024}
    if kind == "seg":
        # the DP alone (forward + backward) on detached potentials of the same batches
        b = bs[0]
        pot = model.potentials(b)
        leaves = [x.detach().requires_grad_(True) for x in (pot.log_init, pot.log_trans, pot.log_emit, pot.log_end)]

        def dp_step():
            r = dp.forward(*leaves, b.tgt_len, model.cfg.max_seg_len)
            (-(r.log_z.sum()) + r.expected_segments.sum()).backward()

        out["dp_ms"] = 1000 * median_time(dp_step, reps)
        out["dp_share"] = out["dp_ms"] / out["step_ms"]
    q.put(out)


def bench_training(hidden: int, emb: int, threads: int, reps: int) -> dict:
    ctx = mp.get_context("spawn")
    out = {}
    for kind in ("seg", "pg"):
        q = ctx.Queue()
        p = ctx.Process(target=_train_step_child, args=(kind, hidden, emb, threads, reps, reps + 2, q))
        p.start()
        out[kind] = q.get()
        p.join()
    return out


def bench_throughput(hidden: int, emb: int, threads: int, reps: int, data_dir: Path | None = None) -> dict:
    """Training throughput of both models in one process, as ``segviz.train`` runs a step
    (forward, backward, clipping, Adam) on real batches of 64, seg and pg alternately on the same
    batch: median step time, examples/s, the seg/pg ratio (median of per-batch ratios) and the
    projected time of one epoch over the whole training set. ``threads`` 0: all cores."""
    from segviz.train import Trainer, set_threads

    threads = set_threads(threads)
    torch.manual_seed(0)
    vocab, bs, source, n_train = e2e_batches(reps + 1, data_dir=data_dir, with_size=True)
    trainers = {}
    for kind in ("seg", "pg"):
        model = build_model(ModelConfig(kind=kind, vocab_size=len(vocab), hidden=hidden, emb_dim=emb))
        trainers[kind] = Trainer(model, torch.optim.Adam(model.parameters(), 1e-3))
    for tr in trainers.values():  # warm-up on the first batch
        float(tr.step(bs[0])["loss"])
    seg_t, pg_t, ratios = [], [], []
    for b in bs[1:]:
        for k, out in (("seg", seg_t), ("pg", pg_t)):
            t0 = time.perf_counter()
            float(trainers[k].step(b)["loss"])
            out.append(time.perf_counter() - t0)
        ratios.append(seg_t[-1] / pg_t[-1])
    examples = statistics.mean(b.size for b in bs[1:])
    res = {"threads": threads, "batches": source, "train_examples": n_train, "steps": len(seg_t),
           "T_mean": statistics.mean(b.tgt.size(1) for b in bs[1:]), "S_mean": statistics.mean(b.rec_mask.size(1) for b in bs[1:]),
           "V": len(vocab), "ratio": statistics.median(ratios)}
    for k, ts in (("seg", seg_t), ("pg", pg_t)):
        t = statistics.median(ts)
        res[k] = {"step_ms": 1000 * t, "examples_per_s": examples / t, "epoch_minutes": n_train * t / examples / 60}
    return res


# ----- 2. decoding on E2E dev with the shipped checkpoints -----------------------------------


def _shipped_e2e(n: int, data_dir: Path | None, checkpoints: Path):
    """The shipped E2E checkpoints and the first ``n`` distinct dev inputs (raises if missing)."""
    from segviz import checkpoint as ckpt
    from segviz.data import load_split, unique_inputs

    seg = ckpt.load(checkpoints / "e2e-seg")
    pg = ckpt.load(checkpoints / "e2e-pg")
    return seg, pg, [e.records for e in unique_inputs(load_split("e2e", "dev", data_dir))][:n]


def bench_decoding(n: int, reps: int, data_dir: Path | None = None, checkpoints: Path = CHECKPOINTS,
                   rules: str | None = None) -> dict:
    """ms per example of each search, greedy and beam 5 without value rules (the paper's
    decoding), and beam 5 with value rules (``beam5_rules``): ``rules`` for the segment model
    (None: each checkpoint's own, as the app and the CLIs decode), PG with its own."""
    from segviz.decode import CONSTRAINTS, DEFAULT_VALUE_RULES, generate_pg, generate_seg

    try:
        seg, pg, inputs = _shipped_e2e(n, data_dir, checkpoints)
    except Exception as e:  # noqa: BLE001
        return {"skipped": f"needs checkpoints/e2e-seg, checkpoints/e2e-pg and the E2E dev set ({e})"}
    out: dict = {"inputs": len(inputs), "rules": rules or seg.default_rules or DEFAULT_VALUE_RULES}
    for name, beam, seg_rules, pg_rules in (("greedy", 1, None, None), ("beam5", 5, None, None),
                                            ("beam5_rules", 5, seg.rules(rules), pg.rules())):
        row = {}
        for c in CONSTRAINTS:
            run = lambda c=c, beam=beam, sr=seg_rules: [generate_seg(seg.model, seg.vocab, r, c, beam, rules=sr) for r in inputs]  # noqa: E731
            row[f"seg_{c}"] = 1000 * median_time(run, reps) / len(inputs)
        run = lambda beam=beam, pr=pg_rules: [generate_pg(pg.model, pg.vocab, r, beam, rules=pr) for r in inputs]  # noqa: E731
        row["pg"] = 1000 * median_time(run, reps) / len(inputs)
        out[name] = row
    return out


# ----- 2b. the app: one Generate with both models, and a rerun that does not generate ---------


def bench_app(n: int, reps: int, data_dir: Path | None = None, checkpoints: Path = CHECKPOINTS) -> dict:
    """Median time of ``service.compare`` (both models, beam 5, PG aligned, verdicts) per E2E dev
    input once the models are loaded, and of a Playground rerun that does not generate
    (Streamlit's AppTest: script run with cached results)."""
    from segviz import service

    try:
        seg, pg, inputs = _shipped_e2e(n, data_dir, checkpoints)
    except Exception as e:  # noqa: BLE001
        return {"skipped": f"needs the shipped E2E checkpoints and dev set ({e})"}
    service.compare("e2e", inputs[0], seg, pg, "rm", 5)  # warm-up
    per_input = []
    for recs in inputs:
        t0 = time.perf_counter()
        service.compare("e2e", recs, seg, pg, "rm", 5)
        per_input.append(time.perf_counter() - t0)
    out = {"inputs": len(inputs), "generate_both_median_ms": 1000 * statistics.median(per_input),
           "generate_both_max_ms": 1000 * max(per_input)}
    try:
        from streamlit.testing.v1 import AppTest

        app = Path(__file__).resolve().parent.parent / "app.py"
        at = AppTest.from_file(str(app), default_timeout=120)
        at.run()
        generate = next(b for b in at.button if "Generate" in (b.label or ""))
        generate.click().run()  # results now cached for this session
        out["rerun_median_ms"] = 1000 * median_time(lambda: at.run(), reps)
        out["rerun_exception"] = bool(at.exception)
    except Exception as e:  # noqa: BLE001
        out["rerun_skipped"] = str(e)
    return out


# ----- 3. scaling on synthetic inputs ----------------------------------------------------------


def _step_costs(seg: SegmentModel, pg: PGModel, vocab: Vocab, K: int, N: int, reps: int, steps: int = 20, batch: int = 1) -> dict:
    """Per-token decoding cost of both models on ``batch`` inputs of K x N decoded in lockstep,
    and the attention part of a step on its own.

    A greedy decoding step of each model is run ``steps`` times from the start state:
    seg = LSTM step + distribution under one record, + a record choice (eq. 3, O(M)) every N
    tokens, amortised; pg = LSTM step with input feeding + attention over all K·N tokens + head.
    Attention part = scores + context + copy (adding the weights into a vocabulary-sized row):
    for seg over the current record's N tokens (:meth:`SegmentModel.attend_record`), for pg over
    all K·N (:meth:`PGModel.attend`). The record choice is reported on its own (per segment).
    Costs are per output token, i.e. a step's time divided by ``batch``.
    """
    items = [encode(vocab, synthetic_records(K, N, len(vocab), seed=b)) for b in range(batch)]
    bt = collate(items, len(vocab))
    with torch.no_grad():
        se, pe = seg.encode(bt), pg.encode(bt)
        y = torch.full((batch,), BOS_ID)
        k = torch.arange(batch) % K + 1  # each row in its own record
        b = None if batch == 1 else torch.arange(batch)
        t = se.tables
        ext_seg = t.one[1][3] if batch == 1 else t.ext[b, k]  # (batch, N) extended ids
        buf = torch.zeros(batch, len(vocab))

        def seg_token():
            d, st = seg.step(y, se.state0)
            for i in range(steps):
                seg.token_dist(se, d, k, 0, b)
                if i % max(N, 1) == 0:  # one record choice per segment of ~N tokens: O(M)
                    seg.transition_step(se, torch.zeros_like(d), d, k)
                d, st = seg.step(y, st)

        def pg_token():
            st = pg.start_state(pe)
            for _ in range(steps):
                _, _, st = pg.token_dist(pe, y, st, 0)

        d0 = se.state0[0]

        def seg_attention():
            for _ in range(steps):
                _, a, _ = seg.attend_record(se, d0, k, b)
                buf.scatter_add_(1, ext_seg, a)  # copy

        def pg_attention():
            for _ in range(steps):
                alpha, _ = pg.attend(pe, d0)
                buf.scatter_add_(1, pe.src_ext, alpha)  # copy

        def record_choice():
            for _ in range(steps):
                seg.transition_step(se, d0, d0, k)

        seg_t, pg_t, ratio = paired_times(seg_token, pg_token, reps)
        seg_a, pg_a, att_ratio = paired_times(seg_attention, pg_attention, reps)
        choice = median_time(record_choice, reps)
    per = 1e6 / steps / batch  # seconds per call -> µs per output token
    return {
        "K": K, "N": N, "batch": batch, "seg_us_per_token": per * seg_t, "pg_us_per_token": per * pg_t, "ratio": ratio,
        "seg_attention_us": per * seg_a, "pg_attention_us": per * pg_a, "attention_ratio": att_ratio,
        "record_choice_us": per * choice,
    }


def bench_scaling(hidden: int, emb: int, V: int, Ks, Ns, reps: int, train_B: int, train_T: int, batches_=(1,)) -> dict:
    torch.manual_seed(0)
    vocab = synthetic_vocab(V)
    seg = build_model(ModelConfig(kind="seg", vocab_size=V, hidden=hidden, emb_dim=emb)).eval()
    pg = build_model(ModelConfig(kind="pg", vocab_size=V, hidden=hidden, emb_dim=emb)).eval()
    decode_rows = [_step_costs(seg, pg, vocab, K, N, 3 * reps, batch=B) for B in batches_ for N in Ns for K in Ks]
    train_rows = []
    for K in Ks:
        b = synthetic_batch(vocab, train_B, K, 2, train_T)
        row = {"K": K, "N": 2, "B": train_B, "T": train_T}
        for kind, model in (("seg", seg), ("pg", pg)):
            model.train()

            def step(model=model, b=b):
                loss, _ = model.loss(b)
                loss.backward()

            row[f"{kind}_step_ms"] = 1000 * median_time(step, max(1, reps // 2))
            model.eval()
        train_rows.append(row)
    return {"decoding": decode_rows, "training": train_rows}


# ----- driver ---------------------------------------------------------------------------------


def run(small: bool = False, threads: int = 1, reps: int = 5, data_dir: Path | None = None, train_threads: int = 0,
        train_only: bool = False, rules: str | None = None) -> dict:
    hidden, emb = (32, 16) if small else (256, 100)
    res: dict = {"threads": threads, "reps": reps, "hidden": hidden, "emb_dim": emb}
    if not small:
        res["throughput"] = bench_throughput(hidden, emb, train_threads, 4 * reps, data_dir)
    torch.set_num_threads(threads)
    if train_only:
        return res
    if not small:
        res["training"] = bench_training(hidden, emb, threads, reps)
        res["decoding"] = bench_decoding(20, max(1, reps // 2), data_dir, rules=rules)
        res["app"] = bench_app(20, reps, data_dir)
    Ks, Ns = ((4, 8), (2,)) if small else ((4, 8, 16, 32, 64), (2, 8))
    res["scaling"] = bench_scaling(hidden, emb, 200 if small else 1000, Ks, Ns, reps, 4 if small else 16, 8 if small else 30,
                                   (1, 4) if small else (1, 16))
    return res


def format_report(res: dict) -> str:
    threads = f"threads={res['threads']} " if "scaling" in res else ""  # decoding / scaling threads
    lines = [f"{threads}reps={res['reps']} hidden={res['hidden']} emb={res['emb_dim']} (medians)"]
    if "throughput" in res:
        t = res["throughput"]
        lines += ["", f"Training throughput, batch 64, {t['threads']} thread(s), seg and pg alternately on the same {t['steps']} batches "
                  f"({t['batches']}: mean T {t['T_mean']:.1f}, S {t['S_mean']:.1f}, V {t['V']}):"]
        for k in ("seg", "pg"):
            r = t[k]
            lines.append(f"  {k:3s} {r['step_ms']:5.0f} ms/step  {r['examples_per_s']:5.0f} ex/s  epoch over {t['train_examples']} examples ≈ {r['epoch_minutes']:.1f} min")
        lines.append(f"  seg/pg step ratio {t['ratio']:.2f} (median of per-batch ratios)")
    if "scaling" not in res:
        return "\n".join(lines)
    if "training" in res:
        s, p = res["training"]["seg"], res["training"]["pg"]
        lines += ["", f"Training step, batch 64 ({s['batches']}):",
                  f"  seg {s['step_ms']:.0f} ms ({s['examples_per_s']:.0f} ex/s), DP {s['dp_ms']:.0f} ms = {100 * s['dp_share']:.1f}% of the step, "
                  f"peak RSS {s['peak_rss_mb']:.0f} MB (+{s['rss_increase_mb']:.0f} MB after loading the data)",
                  f"  pg  {p['step_ms']:.0f} ms ({p['examples_per_s']:.0f} ex/s), "
                  f"peak RSS {p['peak_rss_mb']:.0f} MB (+{p['rss_increase_mb']:.0f} MB after loading the data)"]
    if "decoding" in res:
        d = res["decoding"]
        if "skipped" in d:
            lines += ["", f"Decoding on E2E dev: skipped ({d['skipped']})"]
        else:
            lines += ["", f"Decoding on E2E dev ({d['inputs']} inputs), ms per example:",
                      "  search       seg none  seg r  seg rm     pg"]
            for k in ("greedy", "beam5", "beam5_rules"):
                if r := d.get(k):
                    lines.append(f"  {k:11s} {r['seg_none']:8.1f} {r['seg_r']:6.1f} {r['seg_rm']:7.1f} {r['pg']:6.1f}")
            if "rules" in d:
                lines.append(f"  (beam5_rules: e2e-seg decodes with {d['rules']}, e2e-pg with its own)")
    if "app" in res:
        a = res["app"]
        if "skipped" in a:
            lines += ["", f"App: skipped ({a['skipped']})"]
        else:
            lines += ["", f"App: Generate (both models, beam 5, alignment, verdicts) median {a['generate_both_median_ms']:.0f} ms "
                      f"(max {a['generate_both_max_ms']:.0f} ms) over {a['inputs']} E2E dev inputs"]
            if "rerun_median_ms" in a:
                lines.append(f"     Playground rerun without generating: median {a['rerun_median_ms']:.0f} ms")
    sc = res["scaling"]
    for B in sorted({r["batch"] for r in sc["decoding"]}):
        lines += ["", f"Scaling (synthetic; {B} input{'s' if B > 1 else ''} decoded together; per output token, µs):",
                  "   K  N    seg     pg  seg/pg | attention: seg     pg  seg/pg | seg record choice (per segment)"]
        for r in (r for r in sc["decoding"] if r["batch"] == B):
            lines.append(f"  {r['K']:2d} {r['N']:2d} {r['seg_us_per_token']:6.1f} {r['pg_us_per_token']:6.1f} {r['ratio']:6.2f}  |"
                         f"          {r['seg_attention_us']:5.1f} {r['pg_attention_us']:6.1f} {r['attention_ratio']:6.2f}  | {r['record_choice_us']:6.1f}")
    lines += ["", "Training step against K (N = 2):", "   K   seg ms   pg ms"]
    for r in sc["training"]:
        lines.append(f"  {r['K']:2d} {r['seg_step_ms']:8.0f} {r['pg_step_ms']:7.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--small", action="store_true", help="tiny sizes (smoke test)")
    p.add_argument("--train-threads", type=int, default=0, help="threads for the training throughput (0: all cores, as segviz.train)")
    p.add_argument("--train-only", action="store_true", help="only the training throughput of seg and pg")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--value-rules", type=parse_value_rules, default=None,
                   help="e2e-seg's rules for the decoding row beam5_rules (default: its own, as the app decodes)")
    p.add_argument("--app-latency", action="store_true", help="only the app's latency in Chromium (segviz.latency; its flags follow)")
    args, rest = p.parse_known_args(argv)
    if args.app_latency:  # Generate / posterior view / page switch, click to idle in a real browser
        from segviz import latency

        return latency.main(rest + (["--json", str(args.json)] if args.json else []) + (["--data-dir", str(args.data_dir)] if args.data_dir else []))
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    t0 = time.perf_counter()
    res = run(args.small, args.threads, args.reps, args.data_dir, args.train_threads, args.train_only, args.value_rules)
    res["seconds"] = time.perf_counter() - t0
    print(format_report(res))
    print(f"\n({res['seconds']:.0f} s)")
    if args.json:
        write_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
