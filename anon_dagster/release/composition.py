"""Composition of a new release with every earlier publication of the same population.

Definitions (persons are linkage pseudonyms; a *class* is a set of published rows sharing all
their quasi-identifier values; a person's class in a release is the class holding their row):

- *Intersection attack.* An adversary who knows a person's quasi-identifiers finds the class
  holding them in the new release and in an earlier one; the persons in both classes are the
  candidates. For a person p present in the new release N and an earlier release E, the
  candidate set is ``{q : class_N(q) = class_N(p) and class_E(q) = class_E(p)}``; for a person
  absent from E it is their class in N alone. The *effective k* is the smallest candidate set
  over persons and earlier releases (computed by grouping persons on (new class, old class),
  never person by person). Persons whose effective k is below ``composition.min_k`` are
  *exposed*. The *joint* figure intersects the new release with all earlier ones at once.
- *Expected intersection.* Two independent partitions of N persons into classes of sizes k1
  and k2 share on average k1·k2/N persons: keeping k after intersection would need classes of
  about √(k·N) persons. The result text states this for the smallest classes involved.
- *Sequential-release attack* (m-invariance style). Between two versions of the same release
  (another partition, or an earlier version of the same partition), a class signature (its
  published QI values) whose membership differs by exactly one person reveals who joined or
  left. Counted and reported; it does not change the effective k.

A person with rows in several classes of one release takes part in each (every class is a
place the adversary can find them). Suppressed rows are not published, so those persons are
absent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..risk.classes import EquivalenceClasses
from .ledger import COUNTED_STATUSES, ClassAssignmentRows, Ledger, Publication, linkage_pseudonyms


def _label(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA or value is pd.NaT:
        return "<missing>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def class_assignment(
    published: pd.DataFrame,
    qis: Sequence[str],
    persons: pd.Series | Sequence[object],
    *,
    linkage_key: bytes | None = None,
    classes: EquivalenceClasses | None = None,
) -> ClassAssignmentRows:
    """The class assignment of a table as it is published.

    ``published`` holds the rows that will be published (generalized QIs); ``persons`` gives
    each row's ``composition.person`` value, positionally aligned with ``published`` (for the
    anonymizer's output: ``raw.loc[result.data.index, person]``). With ``linkage_key`` the
    values are turned into linkage pseudonyms here; without it they must already be linkage
    pseudonyms. ``classes`` are ``published``'s equivalence classes over ``qis`` when the
    caller has them (the release gate's measurement); otherwise they are built here.

    The rows are put in classes by the risk kernel (:class:`EquivalenceClasses`), then each
    class gets one signature: the canonical JSON of its QI labels (missing values as
    ``<missing>``, whole floats as integers), computed once per class. Classes whose labels
    coincide share a signature and are one class. Classes are numbered by their signatures'
    sort order, so equal tables give equal assignments (the ledger's format, unchanged).
    """
    qis = list(qis)
    missing = [q for q in qis if q not in published.columns]
    if missing:
        raise DataError(f"the published table has no column {missing[0]!r} (a quasi-identifier)")
    persons = pd.Series(persons, copy=False)
    if len(persons) != len(published):
        raise DataError(f"{len(persons)} person values for {len(published)} published rows")
    person_ids = (
        linkage_pseudonyms(persons, linkage_key) if linkage_key is not None
        else persons.astype(str).to_numpy(dtype=object)
    )
    if len(published) == 0:
        return ClassAssignmentRows(
            pd.DataFrame({"person": pd.Series([], dtype=object), "class_id": pd.Series([], dtype="int64")}),
            [], np.zeros(0, dtype=np.int64),
        )
    if classes is None or classes.qis != qis or classes.n_rows != len(published):
        classes = EquivalenceClasses.from_frame(published, qis)
    keys = classes.keys()
    labels = {q: [_label(v) for v in keys[q].tolist()] for q in qis}
    sigs = np.array(
        [json.dumps(dict(zip(qis, row, strict=True)), sort_keys=True, ensure_ascii=False)
         for row in zip(*(labels[q] for q in qis), strict=True)] if qis else ["{}"] * classes.n_classes,
        dtype=object,
    )
    uniques, class_of_class = np.unique(sigs, return_inverse=True)
    class_of_row = class_of_class.reshape(-1).astype(np.int64)[classes.row_class]
    members = (
        pd.DataFrame({"person": person_ids, "class_id": class_of_row})
        .drop_duplicates()
        .sort_values(["class_id", "person"], kind="stable")
        .reset_index(drop=True)
    )
    rows = np.bincount(class_of_class.reshape(-1), weights=classes.sizes, minlength=len(uniques))
    return ClassAssignmentRows(members, uniques.tolist(), rows.astype(np.int64))


def persons_per_class(assignment: ClassAssignmentRows) -> np.ndarray:
    """Number of distinct persons in each class (index = class_id)."""
    return np.bincount(assignment.members["class_id"].to_numpy(), minlength=len(assignment.signatures))


@dataclass
class PairResult:
    """The new release composed with one earlier publication."""

    publication_id: int
    release: str
    partition: str
    common_persons: int
    effective_k: int
    exposed_persons: int
    expected_intersection: float | None
    example_new: dict[str, str] | None = None
    example_old: dict[str, str] | None = None


@dataclass
class SequentialResult:
    """Classes of equal signature whose membership changed by exactly one person."""

    publication_id: int
    release: str
    partition: str
    shared_signatures: int
    changed_by_one: int


@dataclass
class CompositionResult:
    """Outcome of :func:`check_composition` (no row data, no pseudonyms: safe to show)."""

    passed: bool
    min_k: int
    persons: int
    effective_k: int
    exposed_persons: int
    joint_effective_k: int
    joint_exposed_persons: int
    compared: list[PairResult] = field(default_factory=list)
    sequential: list[SequentialResult] = field(default_factory=list)
    example: dict[str, Any] | None = None
    text: str = ""

    @property
    def sequential_changed_by_one(self) -> int:
        return sum(s.changed_by_one for s in self.sequential)

    def to_dict(self, class_values: bool = True) -> dict[str, Any]:
        """The result as plain JSON. ``class_values=False`` leaves out the published values of
        the smallest intersecting classes (``example``'s ``new_class``/``earlier_class`` and each
        pair's ``example_new``/``example_old``): those classes hold fewer than ``min_k`` persons,
        so their values single them out; sizes stay. Check metadata, reports and the ledger
        store it without them."""
        d = asdict(self)
        d["sequential_changed_by_one"] = self.sequential_changed_by_one
        if not class_values:
            for pair in d["compared"]:
                pair["example_new"] = pair["example_old"] = None
            if d["example"] is not None:
                d["example"] = {k: v for k, v in d["example"].items() if k not in ("new_class", "earlier_class")}
        return d


def _dense(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of an int64 key and each code's count."""
    uniques, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return inverse.reshape(-1), counts


def _per_person_min(person: np.ndarray, values: np.ndarray, n_persons: int) -> np.ndarray:
    """Smallest value per person code (persons without a value get the int64 maximum)."""
    out = np.full(n_persons, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(out, person, values)
    return out


def _intersection(pn: np.ndarray, cn: np.ndarray, po: np.ndarray, co: np.ndarray,
                  new_sizes: np.ndarray, n_old_classes: int) -> tuple[np.ndarray, tuple[int, int, int] | None]:
    """Candidate-set size per new (person, class) row against one earlier release.

    Rows are joined to the person's old class(es) on integer person codes; the size of a
    present row's set is the number of persons in its (new class, old class) group, an absent
    row's is its new class's size. Returns the per-row sizes (aligned with ``pn``; for a
    person with several old classes, the smallest) and the smallest group (new class, old
    class, size).
    """
    left = pd.DataFrame({"row": np.arange(len(pn)), "p": pn, "c": cn})
    right = pd.DataFrame({"p": po, "o": co})
    merged = left.merge(right, on="p", how="inner")
    sizes = new_sizes[cn].astype(np.int64)
    if merged.empty:
        return sizes, None
    key = merged["c"].to_numpy(np.int64) * np.int64(n_old_classes) + merged["o"].to_numpy(np.int64)
    group, counts = _dense(key)
    # (person, new class, old class) rows are distinct, so a group's row count is its persons
    row_sizes = counts[group]
    np.minimum.at(sizes, merged["row"].to_numpy(), row_sizes)
    g = int(np.argmin(counts))
    first = int(np.flatnonzero(group == g)[0])
    return sizes, (int(merged["c"].iat[first]), int(merged["o"].iat[first]), int(counts[g]))


def check_composition(
    assignment: ClassAssignmentRows,
    ledger: Ledger,
    *,
    population: str,
    release: str,
    partition: str | None,
    min_k: int,
) -> CompositionResult:
    """Compose a new release's class assignment with every current publication of
    ``population`` (except ``release``/``partition`` itself, which it would supersede)."""
    partition = partition or ""
    new_sizes = persons_per_class(assignment)
    earlier: list[Publication] = [
        p for p in ledger.entries(population=population)
        if not (p.release == release and p.partition == partition)
    ]
    olds = [(pub, ledger.assignment(pub.id)) for pub in earlier]
    olds = [(pub, a) for pub, a in olds if not a.members.empty]
    # one integer code per person across all releases: every join below is on integers
    person_arrays = [assignment.members["person"].to_numpy(dtype=object)]
    person_arrays += [a.members["person"].to_numpy(dtype=object) for _, a in olds]
    codes, uniques = pd.factorize(np.concatenate(person_arrays)) if len(person_arrays[0]) else (np.zeros(0, np.int64), [])
    n_codes = len(uniques)
    bounds = np.cumsum([0] + [len(a) for a in person_arrays])
    pn = codes[: bounds[1]].astype(np.int64)
    cn = assignment.members["class_id"].to_numpy(np.int64)
    n_persons = int(len(np.unique(pn)))
    if n_persons == 0:
        return CompositionResult(True, min_k, 0, 0, 0, 0, 0, text="nothing to publish: no person to compose")

    alone = _per_person_min(pn, new_sizes[cn].astype(np.int64), n_codes)
    in_new = np.zeros(n_codes, dtype=bool)
    in_new[pn] = True
    effective = alone.copy()
    joint_key = cn.copy()
    pairs: list[PairResult] = []
    worst: dict[str, Any] | None = None
    for i, (pub, old_rows) in enumerate(olds):
        po = codes[bounds[i + 1]: bounds[i + 2]].astype(np.int64)
        co = old_rows.members["class_id"].to_numpy(np.int64)
        old_sizes = persons_per_class(old_rows)
        row_sizes, smallest = _intersection(pn, cn, po, co, new_sizes, len(old_rows.signatures))
        per_person = _per_person_min(pn, row_sizes, n_codes)
        effective = np.minimum(effective, per_person)
        in_old = np.zeros(n_codes, dtype=bool)
        in_old[po] = True
        common = int((in_new & in_old).sum())
        pair_k = int(per_person[in_new].min())
        expected = example_new = example_old = None
        if smallest is not None:
            c_new, c_old, _ = smallest
            example_new = json.loads(assignment.signatures[c_new])
            example_old = json.loads(old_rows.signatures[c_old])
            universe = int((in_new | in_old).sum())
            expected = float(new_sizes[c_new]) * float(old_sizes[c_old]) / universe
            if worst is None or pair_k < worst["effective_k"]:
                worst = {
                    "effective_k": pair_k, "earlier_release": pub.release, "earlier_partition": pub.partition,
                    "new_class": example_new, "earlier_class": example_old,
                    "new_class_persons": int(new_sizes[c_new]), "earlier_class_persons": int(old_sizes[c_old]),
                }
        pairs.append(PairResult(
            pub.id, pub.release, pub.partition, common, pair_k,
            int((per_person[in_new] < min_k).sum()), expected, example_new, example_old,
        ))
        # joint key: a person's (first) old class, or -1 when absent (absence is itself a
        # value to an adversary who links published pseudonyms across releases)
        old_of = np.full(n_codes, -1, dtype=np.int64)
        old_of[po[::-1]] = co[::-1]
        joint_key, _ = _dense(joint_key * np.int64(len(old_rows.signatures) + 1) + old_of[pn] + 1)
    joint_group, joint_counts = _dense(joint_key)
    joint = _per_person_min(pn, joint_counts[joint_group], n_codes)[in_new]
    eff = effective[in_new]
    result = CompositionResult(
        passed=int(eff.min()) >= min_k,
        min_k=min_k,
        persons=n_persons,
        effective_k=int(eff.min()),
        exposed_persons=int((eff < min_k).sum()),
        joint_effective_k=int(joint.min()),
        joint_exposed_persons=int((joint < min_k).sum()),
        compared=pairs,
        example=worst,
    )
    cache = {pub.id: a for pub, a in olds}
    result.sequential = _sequential(assignment, ledger, release, partition, cache)
    result.text = _explain(result, int(alone[in_new].min()))
    return result


def _sequential(assignment: ClassAssignmentRows, ledger: Ledger, release: str, partition: str,
                cache: dict[int, ClassAssignmentRows]) -> list[SequentialResult]:
    """Classes of the same signature whose persons differ by exactly one, per earlier version."""
    # pending entries count too: their data may already be in place (fail safe)
    versions = [p for p in ledger.entries(release=release, include_superseded=True) if p.status in COUNTED_STATUSES]
    out = []
    new_sig = np.asarray(assignment.signatures, dtype=object)
    for pub in versions:
        old_rows = cache.get(pub.id) or ledger.assignment(pub.id)
        if old_rows.members.empty or assignment.members.empty:
            continue
        old_sig = np.asarray(old_rows.signatures, dtype=object)
        # code signatures and persons jointly, then compare (signature, person) pairs as integers
        sig_codes, _ = pd.factorize(np.concatenate([new_sig, old_sig]))
        s_new = sig_codes[: len(new_sig)][assignment.members["class_id"].to_numpy()]
        s_old = sig_codes[len(new_sig):][old_rows.members["class_id"].to_numpy()]
        p_codes, p_uniques = pd.factorize(np.concatenate([
            assignment.members["person"].to_numpy(dtype=object), old_rows.members["person"].to_numpy(dtype=object)]))
        n_p = np.int64(len(p_uniques))
        k_new = np.unique(s_new.astype(np.int64) * n_p + p_codes[: len(s_new)])
        k_old = np.unique(s_old.astype(np.int64) * n_p + p_codes[len(s_new):])
        shared = np.intersect1d(s_new, s_old)
        if len(shared) == 0:
            out.append(SequentialResult(pub.id, pub.release, pub.partition, 0, 0))
            continue
        only = np.concatenate([np.setdiff1d(k_new, k_old, assume_unique=True), np.setdiff1d(k_old, k_new, assume_unique=True)])
        changed = np.bincount(only // n_p, minlength=int(sig_codes.max()) + 1)[shared]
        out.append(SequentialResult(pub.id, pub.release, pub.partition, int(len(shared)), int((changed == 1).sum())))
    return out


def _explain(result: CompositionResult, k_alone: int) -> str:
    lines = [
        f"{result.persons} persons in the new release; smallest class alone: {k_alone} persons; "
        f"composed with {len(result.compared)} earlier publication(s) of the population: "
        f"effective k = {result.effective_k} (joint with all of them: {result.joint_effective_k}); "
        f"{result.exposed_persons} persons below min_k = {result.min_k}."
    ]
    for pair in result.compared:
        if pair.expected_intersection is not None:
            lines.append(
                f"Against {pair.release}/{pair.partition or '-'} ({pair.common_persons} persons in common): "
                f"effective k = {pair.effective_k}, {pair.exposed_persons} exposed; two independent "
                f"classes of k1 and k2 persons out of N share about k1*k2/N persons (here "
                f"{pair.expected_intersection:.2f}), so keeping k after intersection needs classes of "
                f"about sqrt(k*N) persons."
            )
    changed = result.sequential_changed_by_one
    if result.sequential:
        lines.append(
            f"Sequential releases: {changed} class signature(s) changed by exactly one person "
            f"between versions of the release (each reveals who joined or left)."
        )
    lines.append("PASSED" if result.passed else f"FAILED: effective k {result.effective_k} < min_k {result.min_k}")
    return "\n".join(lines)
