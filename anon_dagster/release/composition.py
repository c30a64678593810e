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
from .ledger import ClassAssignmentRows, Ledger, Publication, linkage_pseudonyms


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
) -> ClassAssignmentRows:
    """The class assignment of a table as it is published.

    ``published`` holds the rows that will be published (generalized QIs); ``persons`` gives
    each row's ``composition.person`` value, positionally aligned with ``published`` (for the
    anonymizer's output: ``raw.loc[result.data.index, person]``). With ``linkage_key`` the
    values are turned into linkage pseudonyms here; without it they must already be linkage
    pseudonyms. Classes are numbered by their signatures' sort order, so equal tables give
    equal assignments.
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
    # one label per distinct value per column, then factorize the label tuples
    labels = {}
    for q in qis:
        codes, uniques = pd.factorize(published[q], use_na_sentinel=False)
        labels[q] = np.array([_label(u) for u in uniques], dtype=object)[codes]
    sigs = np.array(
        [json.dumps(dict(zip(qis, row, strict=True)), sort_keys=True, ensure_ascii=False)
         for row in zip(*(labels[q] for q in qis), strict=True)] if qis else ["{}"] * len(published),
        dtype=object,
    )
    uniques = np.unique(sigs)
    class_of_row = np.searchsorted(uniques, sigs).astype(np.int64)
    members = (
        pd.DataFrame({"person": person_ids, "class_id": class_of_row})
        .drop_duplicates()
        .sort_values(["class_id", "person"], kind="stable")
        .reset_index(drop=True)
    )
    return ClassAssignmentRows(members, uniques.tolist(), np.bincount(class_of_row, minlength=len(uniques)))


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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sequential_changed_by_one"] = self.sequential_changed_by_one
        return d


def _intersection(new: pd.DataFrame, old: pd.DataFrame, new_sizes: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:
    """Per new (person, class) pair: the size of its candidate set against one earlier release.

    Returns the candidate-set size per row of ``new`` and the (new class, old class) groups.
    """
    merged = new.merge(old, on="person", how="left", suffixes=("", "_old"))
    present = merged["class_id_old"].notna()
    both = merged[present]
    groups = (
        both.groupby(["class_id", "class_id_old"], sort=False)["person"].nunique()
        .rename("size").reset_index()
    )
    sizes = new_sizes[merged["class_id"].to_numpy()].astype(np.int64)
    if len(both):
        with_size = both.merge(groups, on=["class_id", "class_id_old"], how="left")
        sizes[np.flatnonzero(present.to_numpy())] = with_size["size"].to_numpy()
    # a person can appear in several pairs (rows in several classes): keep the smallest set
    per_person = pd.Series(sizes).groupby(merged["person"].to_numpy()).min()
    return per_person, groups


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
    new = assignment.members[["person", "class_id"]]
    new_sizes = persons_per_class(assignment)
    n_persons = int(new["person"].nunique())
    earlier: list[Publication] = [
        p for p in ledger.entries(population=population)
        if not (p.release == release and p.partition == partition)
    ]
    if n_persons == 0:
        return CompositionResult(True, min_k, 0, 0, 0, 0, 0, text="nothing to publish: no person to compose")

    alone = pd.Series(new_sizes[new["class_id"].to_numpy()]).groupby(new["person"].to_numpy()).min()
    effective = alone.copy()
    joint_key = new[["person", "class_id"]].copy()
    pairs: list[PairResult] = []
    worst: dict[str, Any] | None = None
    for pub in earlier:
        old_rows = ledger.assignment(pub.id)
        old = old_rows.members.rename(columns={"class_id": "class_id_old"})
        if old.empty:
            continue
        per_person, groups = _intersection(new, old, new_sizes)
        effective = np.minimum(effective, per_person.reindex(effective.index))
        common = int(new["person"].isin(old["person"]).groupby(new["person"].to_numpy()).any().sum())
        pair_k = int(per_person.min())
        old_sizes = persons_per_class(old_rows)
        expected = None
        example_new = example_old = None
        if len(groups):
            smallest = groups.loc[groups["size"].idxmin()]
            cn, co = int(smallest["class_id"]), int(smallest["class_id_old"])
            example_new = json.loads(assignment.signatures[cn])
            example_old = json.loads(old_rows.signatures[co])
            universe = len(set(new["person"]) | set(old["person"]))
            expected = float(new_sizes[cn]) * float(old_sizes[co]) / universe
        pair = PairResult(
            pub.id, pub.release, pub.partition, common, pair_k, int((per_person < min_k).sum()),
            expected, example_new, example_old,
        )
        pairs.append(pair)
        if example_new is not None and (worst is None or pair_k < worst["effective_k"]):
            worst = {
                "effective_k": pair_k, "earlier_release": pub.release, "earlier_partition": pub.partition,
                "new_class": example_new, "earlier_class": example_old,
                "new_class_persons": int(new_sizes[int(groups.loc[groups["size"].idxmin(), "class_id"])]),
                "earlier_class_persons": int(old_sizes[int(groups.loc[groups["size"].idxmin(), "class_id_old"])]),
            }
        # joint key: absent persons take class -1 (absence is itself a value to an adversary
        # who links published pseudonyms across releases)
        first = old.drop_duplicates("person")  # one old class per person suffices for the key
        joint_key = joint_key.merge(first.rename(columns={"class_id_old": f"c{pub.id}"}), on="person", how="left")
        joint_key[f"c{pub.id}"] = joint_key[f"c{pub.id}"].fillna(-1).astype("int64")

    class_cols = [c for c in joint_key.columns if c != "person"]
    joint_sizes = joint_key.groupby(class_cols, sort=False)["person"].transform("nunique")
    joint = joint_sizes.groupby(joint_key["person"].to_numpy()).min()
    effective_k = int(effective.min())
    exposed = int((effective < min_k).sum())
    result = CompositionResult(
        passed=effective_k >= min_k,
        min_k=min_k,
        persons=n_persons,
        effective_k=effective_k,
        exposed_persons=exposed,
        joint_effective_k=int(joint.min()),
        joint_exposed_persons=int((joint < min_k).sum()),
        compared=pairs,
        example=worst,
    )
    result.sequential = _sequential(assignment, ledger, release, partition)
    result.text = _explain(result, alone)
    return result


def _sequential(assignment: ClassAssignmentRows, ledger: Ledger, release: str, partition: str) -> list[SequentialResult]:
    """Classes of the same signature whose persons differ by exactly one, per earlier version."""
    versions = [
        p for p in ledger.entries(release=release, include_superseded=True)
        if p.status == "published"
    ]
    new = pd.DataFrame({
        "signature": np.asarray(assignment.signatures, dtype=object)[assignment.members["class_id"].to_numpy()]
        if len(assignment.signatures) else np.array([], dtype=object),
        "person": assignment.members["person"].to_numpy(),
    })
    out = []
    for pub in versions:
        old_rows = ledger.assignment(pub.id)
        if old_rows.members.empty or new.empty:
            continue
        old = pd.DataFrame({
            "signature": np.asarray(old_rows.signatures, dtype=object)[old_rows.members["class_id"].to_numpy()],
            "person": old_rows.members["person"].to_numpy(),
        })
        shared = np.intersect1d(new["signature"].unique(), old["signature"].unique())
        if len(shared) == 0:
            out.append(SequentialResult(pub.id, pub.release, pub.partition, 0, 0))
            continue
        a = new[new["signature"].isin(shared)].drop_duplicates()
        b = old[old["signature"].isin(shared)].drop_duplicates()
        both = a.merge(b, on=["signature", "person"], how="outer", indicator=True)
        changed = (both["_merge"] != "both").groupby(both["signature"].to_numpy()).sum()
        out.append(SequentialResult(pub.id, pub.release, pub.partition, int(len(shared)), int((changed == 1).sum())))
    return out


def _explain(result: CompositionResult, alone: pd.Series) -> str:
    k_alone = int(alone.min())
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
