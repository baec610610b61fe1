"""Length buckets vs ``max_length`` on a real-sized BERT: samples/s, compilations and where the step time goes.

A BERT of MiniLM-L6's shape (6 layers, hidden 384, 12 heads, BERT's 30,522-token vocabulary; random init, nothing
downloaded) trains on synthetic BANKING77 queries (`tpu_helpers.banking77.dataset.make_synthetic`, the lengths of
`tpu_helpers.shared.banking_queries`), batch 32, ``max_length`` 64. Two paddings of one epoch: everything
padded to 64 (the seed), and the course's buckets (`tpu_helpers.shared.boundaries.choose_boundaries`,
at most 3, with `tpu_helpers.banking77.lesson_cells.BucketBatchSampler`). Each candidate runs in its own process
(`benchmarks.harness.run_isolated`) on XLA:CPU, and the same two again in eager PyTorch, which traces nothing: what
the same paddings give without XLA's tracing and compiled graphs.

Per candidate: a warm-up that compiles every shape the timed steps use (two steps per shape: the first step also
builds AdamW's state, a different graph), then the timed passes over the same steps, each a real training loop
(``torch_xla.sync()`` per step, one wait at the end). From torch_xla's metrics: compilations and ``CompileTime``
in the warm-up, none in the timed passes; per step, the host's time before ``sync()`` (Python, dispatch, building
the lazy graph; torch_xla's ``LazyTracing`` metric is the C++ part of it) and in ``sync()`` (graph hash, cache
look-up, waiting for the previous execution, launching), against the device's ``ExecuteTime``. A worker of its
own times forward+backward at width 64 and at the smallest bucket, and the AdamW step alone (each its own graph):
how much of a step's execution does not shrink with the length.

Same F1: a padded position is masked out of attention and pooling, so a model's predictions do not depend on the
padding. A worker checks that on the real-sized model (held-out queries, both paddings, eager): it compares the
logits and the predictions; equal predictions mean the same F1 for a model under either padding.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli, load_warning, run_isolated, time_calls  # noqa: E402

MODULE = "benchmarks.bench_buckets_bert"
MAX_LENGTH, BATCH = 64, 32
SIZES = {  # model shape, timed steps, timed passes, train queries per label
    "full": (dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                  intermediate_size=1536), 10, 2, 16),
    "quick": (dict(vocab_size=30522, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=256), 6, 2, 8),
}
NAMES = {("xla", "max_length"): "XLA:CPU, max_length=64 (the seed)", ("xla", "buckets"): "XLA:CPU, buckets (the course)",
         ("eager", "max_length"): "eager, max_length=64", ("eager", "buckets"): "eager, buckets"}


def _data(n_per_label: int):
    """Texts, labels and token ids (truncated to MAX_LENGTH) of the synthetic train and test splits."""
    from tpu_helpers.banking77 import dataset

    ds = dataset.make_synthetic(n_per_label, 4, seed=0)
    tok = dataset.train_wordpiece_tokenizer(list(ds["train"]["text"]), vocab_size=2000)
    out = {}
    for split in ("train", "test"):
        ids = tok(list(ds[split]["text"]), truncation=True, max_length=MAX_LENGTH)["input_ids"]
        out[split] = (ids, list(ds[split]["label"]))
    return out


def _tensors(ids, labels, indices, width):
    """The batch of rows `indices`, padded to `width` (`course_support.banking77.padded_tensors`), with labels."""
    import torch
    from course_support.banking77 import padded_tensors

    return {**padded_tensors(ids, indices, width), "labels": torch.tensor([labels[i] for i in indices])}


def _model(cfg_args: dict, seed: int = 0):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    keep_attention_masks_on_device()  # no host read of the mask per forward pass (notebook 02)
    torch.manual_seed(seed)
    cfg = BertConfig(**cfg_args, num_labels=77, max_position_embeddings=512, attn_implementation="eager")
    return BertForSequenceClassification(cfg)


def train_worker(spec: dict) -> dict:
    """One candidate: ``{"backend": "xla"|"eager", "strategy", "size"}`` -> samples/s per timed pass and extras."""
    backend, strategy = spec["backend"], spec["strategy"]
    cfg_args, steps, passes, n_per_label = SIZES[spec["size"]]
    if backend == "eager":
        os.environ["USE_TORCH_XLA"] = "0"  # else accelerate (imported by transformers' models) imports torch_xla
    else:
        os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch

    load = os.getloadavg()[0]
    data = _data(n_per_label)
    ids, labels = data["train"]
    from course_support.banking77 import epoch_batches

    epoch, bounds = epoch_batches([len(x) for x in ids], strategy, batch_size=BATCH, max_length=MAX_LENGTH)
    timed = epoch[:steps]
    batches = [_tensors(ids, labels, idx, width) for idx, width in timed]
    real = sum(len(ids[i]) for idx, _ in timed for i in idx)
    computed = sum(len(idx) * width for idx, width in timed)
    epoch_real = sum(len(ids[i]) for idx, _ in epoch for i in idx)
    epoch_computed = sum(len(idx) * width for idx, width in epoch)
    if backend == "xla":
        import torch_xla
        import torch_xla.core.xla_model as xm

        from tpu_helpers.xla_torch.counters import snapshot
        device = torch_xla.device()  # before any backward: autograd sizes its device queues at the first one
    else:
        device = torch.device("cpu")
    model = _model(cfg_args).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
    traced: list[float] = []  # seconds until sync(): Python, dispatch and (on XLA) building the lazy graph
    synced: list[float] = []  # seconds in sync(): hash, cache look-up, waiting for the device, launching

    def step(b):
        t = time.perf_counter()
        b = {k: v.to(device) for k, v in b.items()}
        model(**b).loss.backward()
        opt.step()
        opt.zero_grad()
        t1 = time.perf_counter()
        if backend == "xla":
            torch_xla.sync()
        traced.append(t1 - t)
        synced.append(time.perf_counter() - t1)

    def done():
        if backend == "xla":
            xm.wait_device_ops()  # every step has really run: the time is real

    extra: dict = {}
    shapes = sorted({w for _, w in timed})
    first_of_shape = [next(b for b, (_, w) in zip(batches, timed) if w == s) for s in shapes]
    before = snapshot() if backend == "xla" else None
    for b in first_of_shape * 2:  # the first step also creates AdamW's state: a graph of its own
        step(b)
    done()
    if backend == "xla":
        mid = snapshot()
        extra["compilations (warm-up)"] = mid.counter("UncachedCompile") - before.counter("UncachedCompile")
        extra["CompileTime s"] = round((mid.metric("CompileTime")[1] - before.metric("CompileTime")[1]) / 1e9, 1)
    traced.clear()
    synced.clear()
    def one_pass():
        for b in batches:
            step(b)
        done()

    values = [BATCH * len(batches) / seconds for seconds in time_calls(one_pass, passes, warmup_steps=0)]
    n = passes * len(batches)
    extra["s/step"] = round(BATCH / statistics.median(values), 3)
    extra["to sync s/step"] = round(sum(traced) / n, 3)
    if backend == "xla":
        extra["in sync s/step"] = round(sum(synced) / n, 3)
    if backend == "xla":
        after = snapshot()
        extra["compilations (timed)"] = after.counter("UncachedCompile") - mid.counter("UncachedCompile")
        extra["ExecuteTime s/step"] = round((after.metric("ExecuteTime")[1] - mid.metric("ExecuteTime")[1]) / n / 1e9, 3)
        extra["LazyTracing s/step"] = round((after.metric("LazyTracing")[1] - mid.metric("LazyTracing")[1]) / n / 1e9, 3)
    if backend == "eager" and "torch_xla" in sys.modules:
        raise RuntimeError("the eager candidate imported torch_xla (through transformers?): not a plain process")
    extra["tokens per real token"] = round(computed / real, 2)
    extra["epoch: tokens per real token"] = round(epoch_computed / epoch_real, 2)
    extra["shapes (timed)"] = len(shapes)
    extra["shapes (epoch)"] = len({w for _, w in epoch})
    if bounds:
        extra["boundaries"] = "/".join(map(str, bounds))
    extra["load at start"] = round(load, 2)
    return {"values": values, "extra": extra}


def same_predictions_worker(spec: dict) -> dict:
    """Eager, one model: predictions of the held-out queries padded to max_length vs to their buckets."""
    os.environ["USE_TORCH_XLA"] = "0"
    import torch

    from tpu_helpers.shared.boundaries import choose_boundaries

    cfg_args, _, _, n_per_label = SIZES[spec["size"]]
    data = _data(n_per_label)
    ids, labels = data["test"]
    bounds = choose_boundaries([len(x) for x in data["train"][0]], MAX_LENGTH, max_buckets=3)
    model = _model(cfg_args, seed=1).eval()
    logits = {}
    with torch.no_grad():
        for name in ("max_length", "buckets"):
            out = []
            for start in range(0, len(ids), BATCH):
                idx = list(range(start, min(start + BATCH, len(ids))))
                longest = max(len(ids[i]) for i in idx)
                width = MAX_LENGTH if name == "max_length" else next(b for b in bounds if b >= longest)
                b = _tensors(ids, labels, idx, width)
                out.append(model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits)
            logits[name] = torch.cat(out)
    a, b = logits["max_length"], logits["buckets"]
    return {"rows": len(ids), "same predictions": int((a.argmax(-1) == b.argmax(-1)).sum()),
            "classes predicted": len(set(a.argmax(-1).tolist())),
            "max logit difference": float((a - b).abs().max()), "logit spread": float(a.std())}


def split_worker(spec: dict) -> dict:
    """XLA:CPU, one model: the device's ExecuteTime of forward+backward alone at two widths, and of the optimizer
    step alone (its own graph), so the part of a step that does not depend on the length shows."""
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    from tpu_helpers.xla_torch.counters import snapshot

    cfg_args, _, _, n_per_label = SIZES[spec["size"]]
    cfg_args = {**cfg_args, **spec.get("config", {})}  # e.g. {"vocab_size": 2000}: is the embedding the fixed part?
    ids, labels = _data(n_per_label)["train"]
    device = torch_xla.device()
    model = _model(cfg_args).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)

    def executed(fn) -> float:
        before = snapshot()
        fn()
        torch_xla.sync()
        xm.wait_device_ops()
        return (snapshot().metric("ExecuteTime")[1] - before.metric("ExecuteTime")[1]) / 1e9

    out = {"parameters (M)": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
           "embedding parameters (M)": round(model.bert.embeddings.word_embeddings.weight.numel() / 1e6, 1)}
    rows = [i for i in range(len(ids)) if len(ids[i]) <= min(spec["widths"])][:BATCH]  # the same rows at each width
    for width in spec["widths"]:
        b = {k: v.to(device) for k, v in _tensors(ids, labels, rows, width).items()}
        fwd_bwd, step = [], []
        for r in range(3):  # the first round compiles (and builds AdamW's state): not counted
            f = executed(lambda: model(**b).loss.backward())
            o = executed(lambda: (opt.step(), opt.zero_grad()))
            if r:
                fwd_bwd.append(f)
                step.append(o)
        out[f"forward+backward s (width {width})"] = round(min(fwd_bwd), 3)
        out[f"optimizer s (width {width})"] = round(min(step), 3)
    return out


def worker(spec: dict) -> dict:
    if spec.get("check") == "same_predictions":
        return same_predictions_worker(spec)
    if spec.get("check") == "split":
        return split_worker(spec)
    return train_worker(spec)


def run(quick: bool) -> Benchmark:
    size = "quick" if quick else "full"
    cands = {}
    for backend in ("xla", "eager"):
        for strategy in ("max_length", "buckets"):
            res = run_isolated(MODULE, {"backend": backend, "strategy": strategy, "size": size})
            print(f"  {backend} {strategy}: {res}", file=sys.stderr, flush=True)
            cands[backend, strategy] = Candidate(NAMES[backend, strategy], res["values"], "samples/s",
                                                 extra=res["extra"])
    check = run_isolated(MODULE, {"check": "same_predictions", "size": size})
    smallest = int(str(cands["xla", "buckets"].extra["boundaries"]).split("/")[0])
    split = run_isolated(MODULE, {"check": "split", "size": size, "widths": [MAX_LENGTH, smallest]})
    print(f"  split: {split}", file=sys.stderr, flush=True)
    cfg_args, steps, passes, _ = SIZES[size]
    bench = Benchmark(
        "buckets_bert",
        f"Buckets vs max_length on a BERT {cfg_args['num_hidden_layers']}x{cfg_args['hidden_size']} (random init), "
        f"synthetic BANKING77 queries, batch {BATCH}: {steps} steps x {passes} timed passes per candidate, "
        "each in its own process",
        list(cands.values()), baseline=NAMES["xla", "max_length"])
    bench.notes = notes(bench, cands, check, split)
    return bench


def split_sentence(split: dict) -> str:
    """What the forward+backward / optimizer split measured, in words (from `split_worker`'s figures)."""
    widths = sorted(int(k.split("width ")[1].rstrip(")")) for k in split if k.startswith("forward+backward"))
    small, large = widths[0], widths[-1]
    fb_l, fb_s = split[f"forward+backward s (width {large})"], split[f"forward+backward s (width {small})"]
    opt, opt_s = split[f"optimizer s (width {large})"], split[f"optimizer s (width {small})"]
    fixed = max((fb_s * large - fb_l * small) / (large - small), 0.0)
    return (f"Split in a process of its own (ExecuteTime, each part its own graph): forward+backward took {fb_l:.3f} s "
            f"at width {large} and {fb_s:.3f} s at width {small} ({fb_l / max(fb_s, 1e-9):.2f}x for "
            f"{large / small:.1f}x the tokens), the AdamW step {opt:.3f} s and {opt_s:.3f} s "
            f"({split['parameters (M)']}M parameters, {split['embedding parameters (M)']}M of them the word "
            f"embeddings): {100 * opt / (fb_l + opt):.0f}% of a max_length step's execution is the optimizer's, "
            f"and a straight line through the two forward+backward times leaves {fixed:.3f} s at zero tokens "
            f"({100 * (fixed + opt) / (fb_l + opt):.0f}% of the step with the optimizer, an estimate).")


def notes(bench: Benchmark, cands: dict, check: dict, split: dict) -> str:
    """The measurement in words, written from the figures (the text cannot contradict them)."""
    xm, xb = cands["xla", "max_length"], cands["xla", "buckets"]
    em, eb = cands["eager", "max_length"], cands["eager", "buckets"]
    tokens = xm.extra["tokens per real token"] / xb.extra["tokens per real token"]
    xla_gain = bench.ratio(xb.name, xm.name)
    eager_gain = bench.ratio(eb.name, em.name)
    exec_gain = xm.extra["ExecuteTime s/step"] / max(xb.extra["ExecuteTime s/step"], 1e-9)
    trace_m, trace_b = xm.extra["to sync s/step"], xb.extra["to sync s/step"]
    goal = "meets" if xla_gain >= 2 else "misses"
    timed_compiles = sum(c.extra.get("compilations (timed)", 0) or 0 for c in (xm, xb))
    in_timed = ("none in the timed passes" if timed_compiles == 0
                else f"but {timed_compiles} in the timed passes (the timings include compiling)")
    same = check["same predictions"] == check["rows"] and check["max logit difference"] <= 1e-4 * max(
        check["logit spread"], 1e-9)
    f1_sentence = ("padding is masked out, so a model's F1 does not depend on it" if same else
                   "they differ, so padding changed this model's predictions: check the attention mask")
    return (
        f"Ratios > 1: more samples/s than XLA:CPU with max_length. Buckets compute {tokens:.2f}x fewer tokens in the "
        f"timed steps. On XLA:CPU they give {xla_gain:.2f}x the samples/s of max_length ({goal} the issue's 2x goal); "
        f"the device's execution alone (ExecuteTime) is {exec_gain:.2f}x shorter per step, while the host's part before "
        f"sync() (Python, dispatch, building the lazy graph, which the device must wait for) went from "
        f"{trace_m:.3f} to {trace_b:.3f} s a step ({trace_m / max(trace_b, 1e-9):.2f}x). Eager PyTorch, which traces nothing, gets {eager_gain:.2f}x "
        f"from buckets. {split_sentence(split)} On a TPU the host's work for one step overlaps the device's execution of the last (torch_xla "
        f"runs graphs asynchronously), so a step costs the larger of the two, and the device's part is the one "
        f"that follows the tokens. "
        f"Compilations: {xb.extra['compilations (warm-up)']} for buckets ({xb.extra['shapes (timed)']} shapes in the "
        f"timed steps, {xb.extra['shapes (epoch)']} in an epoch) against {xm.extra['compilations (warm-up)']} for "
        f"max_length, in the warm-up (the first step also builds AdamW's state, a graph of its own), {in_timed}. "
        f"Same F1: one model's logits on {check['rows']} held-out queries padded to max_length and to "
        f"buckets differ by at most {check['max logit difference']:.1e} (logits' spread {check['logit spread']:.2f}; "
        f"{check['same predictions']} of {check['rows']} predictions equal, {check['classes predicted']} classes "
        f"predicted): {f1_sentence}; only the order training sees the samples in differs (notebook 05 trains both "
        f"and compares their F1)." + load_warning([c.extra["load at start"] for c in cands.values()]))


if __name__ == "__main__":
    cli(run, worker)
