"""The anonymeter side of ``benchmarks/attacks_crosscheck.py``: the child-process script that runs
anonymeter 1.1.0 in ``benchmarks/.venv-anonymeter``, and the report's explanation of each
disagreement between the two tools with the figures the child measured.

Imported by ``attacks_crosscheck.py`` (see its docstring for what is compared and printed);
nothing here imports the project: the script runs in an interpreter that cannot.
"""

from __future__ import annotations

from typing import Any

# ----- the anonymeter side: runs in benchmarks/.venv-anonymeter, imports nothing from the project -----

WORKER = r'''
import json, logging, sys, time, warnings
import numpy as np
import pandas as pd
import polars as pl

_default_rng = np.random.default_rng
_seeds = {"seq": np.random.SeedSequence(0)}


def _seeded_rng(seed=None):
    """anonymeter calls np.random.default_rng() without a seed: give it one from the run's seed."""
    return _default_rng(_seeds["seq"].spawn(1)[0] if seed is None else seed)


np.random.default_rng = _seeded_rng
# anonymeter's baseline queries draw values from Series.unique(), whose order varies from run to
# run: the same values in first-seen order make the seeded draws repeat
_unique = pl.Series.unique
pl.Series.unique = lambda self, maintain_order=True: _unique(self, maintain_order=maintain_order)

import anonymeter
import anonymeter.evaluators.singling_out_evaluator as soe
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
from anonymeter.preprocessing.transformations import mixed_types_transform
from anonymeter.preprocessing.type_detection import detect_consistent_col_types

logging.disable(logging.WARNING)
_generated = {}
_generate = soe._generate_singling_out_queries


def _recording(*args, **kwargs):  # observe the queries anonymeter generates, unchanged
    queries = _generate(*args, **kwargs)
    _generated["queries"] = queries
    return queries


soe._generate_singling_out_queries = _recording


def figures(ev):
    """anonymeter's own figures; when its results cannot be computed, the error and the counts."""
    try:
        res = ev.results()
        risk = ev.risk()
    except (ValueError, ZeroDivisionError) as exc:
        from anonymeter.stats.confidence import success_rate
        n = int(ev._n_attacks)
        attack_rate = success_rate(n_total=n, n_success=int(ev._n_success), confidence_level=0.95)
        baseline_rate = success_rate(n_total=n, n_success=int(ev._n_baseline), confidence_level=0.95)
        return {"error": f"{type(exc).__name__}: {exc}", "risk": float("nan"), "ci": [float("nan")] * 2,
                "attack": attack_rate.value, "baseline": baseline_rate.value, "n_success": int(ev._n_success),
                "n_baseline": int(ev._n_baseline), "n_control": float(ev._n_control), "control": float("nan"),
                "n_attacks": [n, n, n]}
    out = {"risk": risk.value, "ci": list(risk.ci), "attack": res.attack_rate.value,
           "attack_error": res.attack_rate.error, "baseline": res.baseline_rate.value,
           "n_success": int(res.n_success), "n_baseline": int(res.n_baseline),
           "n_attacks": [int(res.n_attacks_ori), int(res.n_attacks_baseline), int(res.n_attacks_control)]}
    if res.control_rate is not None:
        out["control"] = res.control_rate.value
        out["control_error"] = res.control_rate.error
        out["n_control"] = float(res.n_control)
    return out


def tie_sets(syn, queries, cols, block=200):
    """Per query row: the boolean mask of syn rows at its smallest distance, on anonymeter's own
    encoding and distance (numeric columns scaled by range, categorical 0/1), in blocks."""
    ctypes = detect_consistent_col_types(syn[cols], queries[cols])
    s, q = mixed_types_transform(syn[cols].reset_index(drop=True), queries[cols].reset_index(drop=True),
                                 num_cols=ctypes["num"], cat_cols=ctypes["cat"])
    num, cat = ctypes["num"], ctypes["cat"]
    s_num = s[num].to_numpy(dtype=float) if num else None
    q_num = q[num].to_numpy(dtype=float) if num else None
    s_cat = s[cat].to_numpy() if cat else None
    q_cat = q[cat].to_numpy() if cat else None
    for start in range(0, len(q), block):
        stop = min(start + block, len(q))
        d = np.zeros((stop - start, len(s)))
        for j in range(len(num)):
            d += np.abs(q_num[start:stop, j][:, None] - s_num[:, j][None, :])
        for j in range(len(cat)):
            d += q_cat[start:stop, j][:, None] != s_cat[:, j][None, :]
        yield start, d <= d.min(axis=1, keepdims=True) + 1e-9


def presence(syn, ori, con):
    """A synthetic table's tuples against the real records, both ways: how many distinct synthetic
    tuples (anonymeter's query pool) are a training / control record's, and how many training /
    control persons find their own tuple exactly once among the synthetic rows (anon_dagster's
    success)."""
    counts = syn.value_counts()
    keys = {side: pd.MultiIndex.from_frame(f) for side, f in (("main", ori), ("control", con))}
    unique = counts.index[counts.to_numpy() == 1]
    out = {"syn_distinct": len(counts), "syn_unique": len(unique)}
    for side, key in keys.items():
        on_syn = counts.reindex(key).fillna(0).to_numpy()
        out[side] = {"distinct_real": int(counts.index.isin(key).sum()),
                     "unique_real": int(unique.isin(key).sum()),
                     "persons_once": float((on_syn == 1).mean()), "persons_absent": float((on_syn == 0).mean())}
    return out


def singling_out(rel, main, ctl, qis, n_attacks, seed, synthetic=False):
    syn, ori, con = (f[qis].astype(str) for f in (rel, main, ctl))
    distinct = len(syn.drop_duplicates())
    n = min(n_attacks, distinct)
    counts = syn.value_counts()
    ev = SinglingOutEvaluator(ori=ori, syn=syn, n_attacks=n, n_cols=len(qis), control=con,
                              max_attempts=max(100 * n, 100_000), seed=seed)
    ev.evaluate(mode="multivariate")
    out = figures(ev)
    generated = _generated["queries"]
    on_ori = np.array(soe._evaluate_queries(pl.DataFrame(ori), generated), dtype=float)
    on_con = np.array(soe._evaluate_queries(pl.DataFrame(con), generated), dtype=float)
    succeeded = np.array(soe._evaluate_queries(ev._ori, generated), dtype=float) == 1
    out["mechanism"] = {
        "release_rows": len(syn), "release_distinct": distinct,
        "release_unique": int((counts == 1).sum()),
        "main_rows": len(ori), "main_distinct": ev._ori.height,
        "control_rows": len(con), "control_distinct": ev._control.height,
        "queries": len(generated),
        "success_deduplicated": int(succeeded.sum()),
        "success_per_person": int((on_ori == 1).sum()),
        "persons_per_shared_median": float(np.median(on_ori[succeeded & (on_ori >= 2)]))
        if (succeeded & (on_ori >= 2)).any() else 0.0,
        "success_several_persons": int((succeeded & (on_ori >= 2)).sum()),
        "control_deduplicated": int((np.array(soe._evaluate_queries(ev._control, generated)) == 1).sum()),
        "control_per_person": int((on_con == 1).sum()),
    }
    if synthetic:
        on_syn = np.array(soe._evaluate_queries(pl.DataFrame(syn), generated), dtype=float)
        out["mechanism"]["presence"] = presence(syn, ori, con)
        out["mechanism"]["queries_unique_rows"] = int((on_syn == 1).sum())
        out["mechanism"]["success_unique_rows"] = int((succeeded & (on_syn == 1)).sum())
    return out


def linkability(rel, main, ctl, parts, n_attacks, seed):
    n = min(n_attacks, len(main), len(ctl))
    ev = LinkabilityEvaluator(ori=main, syn=rel, aux_cols=parts, n_attacks=n, n_neighbors=1, control=ctl)
    np.random.seed(seed)
    ev.evaluate(n_jobs=-1)
    out = figures(ev)
    # the same targets again: the evaluator's only draws from numpy's global state are these two samples
    np.random.seed(seed)
    drawn = {"main": main.sample(n), "control": ctl.sample(n)}
    links = {"main": ev._attack_links, "control": ev._control_links}
    mech = {}
    for side, targets in drawn.items():
        idx = (links[side]._idx_0[:, 0], links[side]._idx_1[:, 0])
        size_a, size_b, kept, in_ties, linked_tied = [], [], [], 0, 0
        sets_a = dict(tie_sets(rel, targets, parts[0]))
        for start, tie_b in tie_sets(rel, targets, parts[1]):
            tie_a = sets_a[start]
            rows = np.arange(start, start + len(tie_a))
            a, b = tie_a.sum(axis=1), tie_b.sum(axis=1)
            size_a += a.tolist()
            size_b += b.tolist()
            kept += ((tie_a & tie_b).sum(axis=1) / (a * b)).tolist()
            in_ties += int((tie_a[np.arange(len(rows)), idx[0][rows]] & tie_b[np.arange(len(rows)), idx[1][rows]]).sum())
            linked_tied += int(((idx[0][rows] == idx[1][rows]) & ((a > 1) | (b > 1))).sum())
        mech[side] = {"ties_a_median": float(np.median(size_a)), "ties_b_median": float(np.median(size_b)),
                      "tied": float(np.mean((np.array(size_a) > 1) | (np.array(size_b) > 1))),
                      "rate_ties_kept": float(np.mean(kept)), "links_ties_kept": float(np.sum(kept)),
                      "links_reported": int(np.sum(idx[0] == idx[1])),
                      "rate_reported": float(np.mean(idx[0] == idx[1])),
                      "picks_in_ties": in_ties / n, "links_among_ties": linked_tied}
    out["mechanism"] = mech
    return out


def inference(rel, main, ctl, qis, secret, n_attacks, seed):
    n = min(n_attacks, len(main), len(ctl))
    ev = InferenceEvaluator(ori=main, syn=rel, aux_cols=qis, secret=secret, regression=False, n_attacks=n,
                            control=ctl)
    np.random.seed(seed)
    ev.evaluate(n_jobs=-1)
    out = figures(ev)
    share = rel[secret].value_counts(normalize=True)
    every, _ = ev._attack(target=main, naive=True, n_jobs=-1, n_attacks=min(len(main), len(rel)))
    base = ev._guesses_baseline
    truth = main.loc[base.index, secret]
    drawn = base.notna().to_numpy()
    mech = {"baseline_label_found": float(drawn.mean()),
            "baseline_right_when_found": float((base[drawn] == truth[drawn]).mean()) if drawn.any() else 0.0,
            "baseline_positional": float(share.reindex(truth.to_numpy()).fillna(0).mean()),
            "baseline_every_target": every / min(len(main), len(rel))}
    for side, frame, guesses in (("main", main, ev._guesses_success), ("control", ctl, ev._guesses_control)):
        targets = frame.loc[guesses.index]
        truth = targets[secret].to_numpy()
        secrets = rel[secret].to_numpy()
        sizes, nearest, majority = [], [], []
        for start, tie in tie_sets(rel, targets, qis):
            for i, mask in enumerate(tie):
                values = pd.Series(secrets[mask]).value_counts()
                sizes.append(int(mask.sum()))
                nearest.append(values.get(truth[start + i], 0) / mask.sum())
                top = values[values == values.max()]
                majority.append(1.0 / len(top) if truth[start + i] in top.index else 0.0)
        mech[side] = {"ties_median": float(np.median(sizes)), "tied": float(np.mean(np.array(sizes) > 1)),
                      "rate_reported": float((guesses.to_numpy() == truth).mean()),
                      "rate_nearest_ties_kept": float(np.mean(nearest)),
                      "rate_majority": float(np.mean(majority))}
    out["mechanism"] = mech
    return out


job = json.load(open(sys.argv[1]))
out = {"versions": {"anonymeter": getattr(anonymeter, "__version__", "1.1.0"), "pandas": pd.__version__,
                    "numpy": np.__version__, "polars": pl.__version__}, "releases": {}}
for name, files in job["releases"].items():
    rel, main, ctl = (pd.read_parquet(files[k]) for k in ("release", "main", "control"))
    runs = []
    for r in range(job["repeat"]):
        seed = job["seed"] + r
        _seeds["seq"] = np.random.SeedSequence(seed)
        pl.set_random_seed(seed)  # polars' DataFrame.sample in the control-size correction
        run, seconds = {}, {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            run["singling_out"] = singling_out(rel, main, ctl, job["qis"], job["n_attacks"], seed,
                                               name in job["synthetic"])
            t1 = time.perf_counter()
            run["linkability"] = linkability(rel, main, ctl, tuple(job["parts"]), job["n_attacks"], seed)
            t2 = time.perf_counter()
            for secret in job["secrets"]:
                qis = [c for c in job["qis"] if c != secret]
                run["inference:" + secret] = inference(rel, main, ctl, qis, secret, job["n_attacks"], seed)
            t3 = time.perf_counter()
        run["seconds"] = {"singling_out": t1 - t0, "linkability": t2 - t1, "inference": t3 - t2}
        run["warnings"] = sorted({str(w.message).split(".")[0][:90] for w in caught})
        runs.append(run)
    out["releases"][name] = runs
print(json.dumps(out))
'''


# ----- the explanations of the report -------------------------------------------------------------

LABELS = {"singling_out": "singling out", "linkability": "linkability",
          "inference:occupation": "inference: occupation", "inference:salary-class": "inference: salary class"}


def disagree(a: dict[str, Any], m: dict[str, Any]) -> bool:
    """The two tools disagree: anonymeter failed, or the main (or control) rates' 95 % intervals do
    not overlap, or anon_dagster's residual (clipped at 0, as anonymeter clips) lies outside
    anonymeter's risk interval."""
    if "error" in m:
        return True

    def apart(ours_lo: float, ours_hi: float, theirs: float, error: float) -> bool:
        return ours_hi < theirs - error - 1e-9 or ours_lo > theirs + error + 1e-9

    return (apart(*a["main_ci"], m["attack"], m["attack_error"])
            or apart(*a["control_ci"], m["control"], m["control_error"])
            or not m["ci"][0] - 1e-9 <= max(a["residual"], 0.0) <= m["ci"][1] + 1e-9)


def explanations(rungs: list[dict[str, Any]], theirs: dict[str, Any]) -> list[str]:
    out: list[str] = []
    flagged = {(r["release"], key) for r in rungs for key in LABELS
               if disagree(r["attacks"][key], theirs[r["release"]][key])}
    agree = [f"{rel} / {LABELS[key]}" for rel in theirs for key in LABELS if (rel, key) not in flagged]

    # singling out
    so = [(r, theirs[r["release"]]["singling_out"]) for r in rungs]
    if any((r["release"], "singling_out") in flagged for r, _ in so):
        out.append("Singling out: anonymeter drops duplicate rows (on the attacker's columns) from the release, the "
                   "main and the control records before counting, so a class of identical records counts as one "
                   "isolated record. (Its control rate asks whether a query built from a release row isolates in "
                   "the control records; anon_dagster's, whether a control person's own predicate isolates a "
                   "release person.)")
        for r, m in so:
            x = m["mechanism"]
            if r["synthetic"]:
                out.append(synthetic_singling_out(r, m))
                continue
            dropped = x["release_rows"] - x["release_distinct"]
            per_person = x["success_per_person"] / max(x["queries"], 1)
            out.append(
                f"- {r['release']}: the release's {x['release_rows']:,} rows hold {x['release_distinct']:,} distinct "
                f"tuples, so {dropped:,} rows ({dropped / x['release_rows']:.1%}) are dropped "
                f"(main records: {x['main_rows'] - x['main_distinct']:,} dropped; control: "
                f"{x['control_rows'] - x['control_distinct']:,}). Of its {x['queries']:,} queries, "
                f"{x['success_deduplicated']:,} isolate a record of the deduplicated main records (its attack rate), "
                f"{x['success_several_persons']:,} of them hold for 2 or more persons of the table as published "
                f"(median {x['persons_per_shared_median']:.0f} persons each); counted per person, "
                f"{x['success_per_person']:,} isolate (rate {per_person:.3f}). Its control queries: "
                f"{x['control_deduplicated']:,} isolate in the deduplicated control records, "
                f"{x['control_per_person']:,} per person.")
            if x["release_unique"]:
                out[-1] += (
                    f" The rest of the gap is whom the queries are about: {x['release_unique']:,} of the release's "
                    f"{x['release_rows']:,} persons are unique on the seven columns, "
                    f"{x['release_unique'] / x['release_rows']:.3f} of persons (anon_dagster's main rate "
                    f"{r['attacks']['singling_out']['main']:.3f}: one target per person) but "
                    f"{x['release_unique'] / max(x['release_distinct'], 1):.3f} of distinct tuples, which anonymeter's "
                    f"queries are drawn from (a random row of the deduplicated release).")
            if "error" in m:
                out.append(f"  anonymeter fails here ({m['error']}): the deduplicated control records "
                           f"({x['control_distinct']:,}) and main records ({x['main_distinct']:,}) differ in size, so "
                           f"it scales its control count by a fitted curve, to {m['n_control']:,.1f} for "
                           f"{m['n_attacks'][0]:,} queries: a rate above 1, whose variance is negative.")
        out.append("")

    # linkability
    lk = [(r, theirs[r["release"]]["linkability"]) for r in rungs]
    if any((r["release"], "linkability") in flagged for r, _ in lk):
        out.append("Linkability: anonymeter takes one nearest record for each part (numba's argsort of the distances) "
                   "and counts a link when the two are the same row; identical records are ties, broken by the "
                   "sort, not counted 1/t. Measured on its own distance function and its own targets:")
        for r, m in lk:
            for side in ("main", "control"):
                x = m["mechanism"][side]
                out.append(
                    f"- {r['release']}, {side}: {x['tied']:.1%} of targets have more than one nearest record on a part "
                    f"(median tie {x['ties_a_median']:.0f} records on part A, {x['ties_b_median']:.0f} on part B); "
                    f"linked as reported {x['rate_reported']:.3f} ({x['links_reported']:,} links), with ties kept "
                    f"(|A∩B| / |A||B|) {x['rate_ties_kept']:.3f} ({x['links_ties_kept']:.1f} links expected); "
                    f"{x['links_among_ties']:,} of its links joined two tied parts; "
                    f"its picks lie in the recomputed tie sets for {x['picks_in_ties']:.1%} of targets (check).")
            for side in r["reached"]:  # none on a synthetic table: nothing was decoded
                y = r["reached"][side]
                if (y["A_covering"], y["B_covering"]) != (y["A_equal_labels"], y["B_equal_labels"]):
                    out.append(
                        f"  {r['release']}, {side}: the decoded record carries its whole class's labels, narrower "
                        f"than the raw values of one part: median records reached on part A "
                        f"{y['A_covering']:.0f} from the raw values (anon_dagster's candidates) against "
                        f"{y['A_equal_labels']:.0f} with the decoded labels; part B {y['B_covering']:.0f} against "
                        f"{y['B_equal_labels']:.0f}. Label equality cannot say that a value lies in a box.")
        out.append("")

    # inference
    inf_keys = [k for k in LABELS if k.startswith("inference")]
    if any((r["release"], k) in flagged for r in rungs for k in inf_keys):
        out.append("Inference baseline: anonymeter draws release rows at random for its guesses, then reindexes them "
                   "onto the targets by index label (`guesses.reindex_like(targets)`): a target gets the guess of the "
                   "release row carrying its own label, or none. The release and the main records are row-aligned "
                   "(as an original table and its anonymized copy are), so that row is the target's own record; a "
                   "synthetic row under the same label is nobody's record.")
        for r in rungs:
            for key in inf_keys:
                m, a = theirs[r["release"]][key], r["attacks"][key]
                x = m["mechanism"]
                if r["synthetic"]:
                    out.append(
                        f"- {r['release']}, {LABELS[key]}: {x['baseline_label_found']:.1%} of targets found a guess "
                        f"(the others got NaN, counted wrong); the synthetic row carrying the target's label was right "
                        f"{x['baseline_right_when_found']:.1%} of the time (a positionally random synthetic row: "
                        f"{x['baseline_positional']:.3f}); baseline reported {m['baseline']:.3f} (about the two "
                        f"multiplied), {x['baseline_every_target']:.3f} with every training record a target "
                        f"(anon_dagster's baseline {a['baseline']:.3f}).")
                    continue
                out.append(
                    f"- {r['release']}, {LABELS[key]}: {x['baseline_label_found']:.1%} of targets found a guess "
                    f"(the others got NaN, counted wrong); those were right {x['baseline_right_when_found']:.1%} of "
                    f"the time (their own secret); baseline reported {m['baseline']:.3f}, and "
                    f"{x['baseline_every_target']:.3f} with every main record a target; a positionally random "
                    f"release row is right {x['baseline_positional']:.3f} of the time on the same targets "
                    f"(anon_dagster's baseline {a['baseline']:.3f}).")
        out.append("")
        out.append("Inference attack: anonymeter guesses the secret of one nearest record (1-NN, ties broken by the "
                   "sort); anon_dagster guesses the most frequent secret among all nearest records (ties 1/m). "
                   "Measured on anonymeter's own distances and targets:")
        for r in rungs:
            for key in inf_keys:
                m, a = theirs[r["release"]][key], r["attacks"][key]
                parts = []
                for side in ("main", "control"):
                    x = m["mechanism"][side]
                    parts.append(f"{side}: median tie {x['ties_median']:.0f} records ({x['tied']:.0%} of targets tied), "
                                 f"reported {x['rate_reported']:.3f}, one tied record drawn at random "
                                 f"{x['rate_nearest_ties_kept']:.3f}, most frequent secret {x['rate_majority']:.3f} "
                                 f"(anon_dagster {a[side]:.3f})")
                out.append(f"- {r['release']}, {LABELS[key]}: " + "; ".join(parts) + ".")
        out.append("")
    if agree:
        out.append("Agreeing (main and control rates' 95 % intervals overlap, anon_dagster's residual inside "
                   "anonymeter's interval): " + ", ".join(agree) + ".")
    return out


def synthetic_singling_out(r: dict[str, Any], m: dict[str, Any]) -> str:
    """The singling-out disagreement on a synthetic table: the two tools ask converse questions."""
    x, a = m["mechanism"], r["attacks"]["singling_out"]
    p, q = x["presence"], x["queries"]
    tm, tc = p["main"], p["control"]
    return (f"- {r['release']}: anonymeter deduplicates the synthetic table too, so each of its "
            f"{p['syn_distinct']:,} distinct tuples (of {x['release_rows']:,} rows) is a query that isolates; "
            f"a query succeeds when the tuple is a training record's: {x['success_deduplicated']:,} of its {q:,} "
            f"queries (its attack rate), against a control record's {x['control_deduplicated']:,}. Over every "
            f"distinct synthetic tuple, {tm['distinct_real'] / p['syn_distinct']:.3f} are a training record's and "
            f"{tc['distinct_real'] / p['syn_distinct']:.3f} a control record's: anonymeter measures how many "
            f"synthetic combinations are real ones. anon_dagster asks the converse, per person: a target is "
            f"singled out when their own tuple is on exactly one synthetic row. {p['syn_unique']:,} tuples are on "
            f"one row; {tm['persons_once']:.3f} of training persons find theirs there (anon_dagster's main rate "
            f"{a['main']:.3f}) and {tc['persons_once']:.3f} of control persons (control {a['control']:.3f}); "
            f"{tm['persons_absent']:.3f} and {tc['persons_absent']:.3f} find theirs on no synthetic row. Those "
            f"one-row tuples are {tm['unique_real']:,} training and {tc['unique_real']:,} control tuples. Of "
            f"anonymeter's queries, {x['queries_unique_rows']:,} come from a tuple on one synthetic row and "
            f"{x['success_unique_rows']:,} of them succeed; the other {q - x['queries_unique_rows']:,} each stand "
            f"for several identical synthetic rows (a common combination, a real one more often) and "
            f"{x['success_deduplicated'] - x['success_unique_rows']:,} of them succeed. "
            f"Counted per training person, {x['success_per_person']:,} of its queries isolate one "
            f"({x['control_per_person']:,} one control person).")


__all__ = ["LABELS", "WORKER", "disagree", "explanations", "synthetic_singling_out"]
