"""Composition checks: intersection attack, effective k, sequential releases."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.release.composition import check_composition, class_assignment
from tests.support.ledgers import env_ledger, new_ledger

KEY = b"linkage-key-for-tests-0123456789"


def _population(n: int = 600, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "patient_id": [f"P{i:05d}" for i in range(n)],
        "age": rng.integers(20, 80, n),
        "sex": rng.choice(["F", "M"], n),
        "province": rng.choice(["Madrid", "Toledo", "Avila"], n),
        "profession": rng.choice(["nurse", "teacher", "farmer", "clerk"], n),
    })


def _five_anonymous(df: pd.DataFrame, qis: list[str], k: int = 5) -> pd.DataFrame:
    """Generalize age to 20-year bins and suppress the classes smaller than k."""
    out = df.copy()
    lower = (out["age"] // 20) * 20
    out["age"] = lower.astype(str) + "-" + (lower + 19).astype(str)
    size = out.groupby(qis)["patient_id"].transform("size")
    return out[size >= k]


def _brute_force(new: pd.DataFrame, old: pd.DataFrame, qn: list[str], qo: list[str]) -> dict[str, int]:
    """Per person of ``new``: |people sharing their class in new and in old| (or in new alone)."""
    new_class = {p: tuple(r) for p, r in zip(new["patient_id"], new[qn].itertuples(index=False), strict=True)}
    old_class = {p: tuple(r) for p, r in zip(old["patient_id"], old[qo].itertuples(index=False), strict=True)}
    out = {}
    for p, c in new_class.items():
        same_new = {q for q, cq in new_class.items() if cq == c}
        if p in old_class:
            same = {q for q in same_new if old_class.get(q) == old_class[p]}
        else:
            same = same_new
        out[p] = len(same)
    return out


def _record(ledger, release, df, qis, partition="2024", population="patients"):
    a = class_assignment(df[qis], qis, df["patient_id"], linkage_key=KEY)
    return ledger.record(release=release, partition=partition, population=population, spec_hash="s",
                         data_hash=f"{release}-{len(df)}", qis=dict.fromkeys(qis, 1), k=5, assignment=a)


def test_two_five_anonymous_releases_fail_composition(tmp_path):
    """The must-show case: {age, sex, province} then {age, sex, profession} of the same people."""
    pop = _population()
    q1, q2 = ["age", "sex", "province"], ["age", "sex", "profession"]
    r1, r2 = _five_anonymous(pop, q1), _five_anonymous(pop, q2)
    for release, qis in ((r1, q1), (r2, q2)):
        assert release.groupby(qis).size().min() >= 5  # each is 5-anonymous alone
        assert len(release) > 0.9 * len(pop)
    ledger = new_ledger(tmp_path / "ledger.sqlite")
    _record(ledger, "by_province", r1, q1)

    new = class_assignment(r2[q2], q2, r2["patient_id"], linkage_key=KEY)
    result = check_composition(new, ledger, population="patients", release="by_profession",
                               partition="2024", min_k=5)
    expected = _brute_force(r2, r1, q2, q1)
    assert not result.passed
    assert result.effective_k == min(expected.values()) < 5
    assert result.exposed_persons == sum(v < 5 for v in expected.values()) > 0
    assert result.persons == len(r2)
    # the example names the two classes by their generalized values, never a person
    assert set(result.example["new_class"]) == set(q2)
    assert set(result.example["earlier_class"]) == set(q1)
    dumped = json.dumps(result.to_dict())
    assert "P0" not in dumped and "linkage" not in dumped
    assert "k1*k2/N" in result.text and "FAILED" in result.text
    # what the gate keeps (check metadata, reports, the ledger) has the sizes, not the values of
    # the smallest intersecting classes, which hold fewer than min_k persons
    shown = result.to_dict(class_values=False)
    assert "new_class" not in shown["example"] and "earlier_class" not in shown["example"]
    assert shown["example"]["new_class_persons"] == result.example["new_class_persons"]
    assert all(p["example_new"] is None and p["example_old"] is None for p in shown["compared"])
    values = {str(v) for c in (result.example["new_class"], result.example["earlier_class"]) for v in c.values()}
    kept = json.dumps(shown)
    assert not any(f'"{v}"' in kept for v in values if not v.isdigit())

    relaxed = check_composition(new, ledger, population="patients", release="by_profession",
                                partition="2024", min_k=1)
    assert relaxed.passed and relaxed.effective_k == result.effective_k
    published = _record(ledger, "by_profession", r2, q2)
    assert published.action == "inserted"
    assert len(ledger.entries(population="patients")) == 2


def test_other_populations_and_the_same_partition_are_not_composed(tmp_path):
    pop = _population(200)
    q = ["age", "sex"]
    r = _five_anonymous(pop, q)
    ledger = new_ledger(tmp_path / "l.sqlite")
    # the same people under another population name, with QIs that would single them out
    _record(ledger, "other", pop.assign(age=pop["age"].astype(str)), ["age", "sex", "profession"],
            population="employees")
    # the same release and partition (it is being re-published, so it would be superseded)
    _record(ledger, "mine", pop.assign(age=pop["age"].astype(str)), ["age", "sex", "province"])
    new = class_assignment(r[q], q, r["patient_id"], linkage_key=KEY)
    result = check_composition(new, ledger, population="patients", release="mine", partition="2024", min_k=5)
    assert result.compared == [] and result.passed
    assert result.effective_k == r.groupby(q).size().min()


def test_absent_persons_are_compared_with_the_new_release_alone(tmp_path):
    # new release: one class {a, b, c}; old release holds only a and b, in different classes
    new = class_assignment(pd.DataFrame({"x": ["1", "1", "1"]}), ["x"], ["a", "b", "c"])
    ledger = new_ledger(tmp_path / "l.sqlite")
    old = class_assignment(pd.DataFrame({"y": ["u", "v"]}), ["y"], ["a", "b"])
    ledger.record(release="old", partition="", population="p", spec_hash="s", data_hash="h",
                  qis={"y": 0}, k=1, assignment=old)
    result = check_composition(new, ledger, population="p", release="new", partition="", min_k=2)
    # a and b are each alone in (new class, old class); c is only compared with {a, b, c}
    assert result.effective_k == 1
    assert result.exposed_persons == 2
    assert result.compared[0].common_persons == 2
    assert result.example["new_class"] == {"x": "1"}
    assert result.example["earlier_class"] in ({"y": "u"}, {"y": "v"})


def test_sequential_release_reveals_who_joined(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    v1 = class_assignment(pd.DataFrame({"g": ["A"] * 5 + ["B"] * 5}), ["g"], [f"p{i}" for i in range(10)])
    ledger.record(release="monthly", partition="2024-01", population="p", spec_hash="s", data_hash="1",
                  qis={"g": 0}, k=5, assignment=v1)
    # next month: class A gains exactly one person (p10), class B is unchanged
    persons = [f"p{i}" for i in range(10)] + ["p10"]
    v2 = class_assignment(pd.DataFrame({"g": ["A"] * 5 + ["B"] * 5 + ["A"]}), ["g"], persons)
    result = check_composition(v2, ledger, population="p", release="monthly", partition="2024-02", min_k=5)
    assert [s.changed_by_one for s in result.sequential] == [1]
    assert result.sequential[0].shared_signatures == 2
    assert "changed by exactly one person" in result.text


def test_no_earlier_publication_gives_the_class_size_alone(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    # person p0 has two rows in two classes: both count as places they can be found
    a = class_assignment(pd.DataFrame({"g": ["A", "A", "B", "B", "B"]}), ["g"], ["p0", "p1", "p0", "p2", "p3"])
    result = check_composition(a, ledger, population="p", release="r", partition="", min_k=2)
    assert result.effective_k == 2 and result.passed and result.persons == 4
    assert result.joint_effective_k == 2


@st.composite
def _releases(draw):
    n = draw(st.integers(2, 25))
    persons = [f"p{i}" for i in range(n)]
    new_cls = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    old_cls = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    new = pd.DataFrame({"patient_id": persons, "a": [str(c) for c in new_cls]})
    old = pd.DataFrame({"patient_id": persons, "b": [str(c) for c in old_cls]})[present]
    return new, old


@settings(max_examples=40, deadline=None)
@given(_releases())
def test_vectorized_effective_k_matches_brute_force(tmp_path_factory, releases):
    new, old = releases
    ledger = new_ledger(tmp_path_factory.mktemp("l") / "l.sqlite")
    if len(old):
        ledger.record(release="old", partition="", population="p", spec_hash="s", data_hash="h",
                      qis={"b": 0}, k=1, assignment=class_assignment(old[["b"]], ["b"], old["patient_id"]))
    a = class_assignment(new[["a"]], ["a"], new["patient_id"])
    result = check_composition(a, ledger, population="p", release="new", partition="", min_k=3)
    expected = _brute_force(new, old, ["a"], ["b"])
    assert result.effective_k == min(expected.values())
    assert result.exposed_persons == sum(v < 3 for v in expected.values())
    assert result.joint_effective_k <= result.effective_k


# ----- the CLI ------------------------------------------------------------------------------


def _write_spec(folder, name: str, qis: list[str], min_k: int = 5, mode: str = "rows") -> str:
    import yaml

    columns = {"patient_id": {"role": "identifier", "pseudonymize": {"method": "hmac"}}}
    for q in ("age", "sex", "province", "profession"):
        columns[q] = {"role": "quasi" if q in qis else "insensitive"}
    publication = {"path": "out/{partition}.csv", "mode": mode}
    if mode == "aggregates":
        publication.update(epsilon=0.5, total_epsilon=1.0, aggregates={"group_by": ["sex"]})
    spec = {
        "release": name, "source": {"path": f"{name}.csv"}, "columns": columns,
        "anonymization": {"method": "none" if mode == "aggregates" else "global", "k": 5},
        "composition": {"population": "patients", "person": "patient_id", "min_k": min_k},
        "publication": publication,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_compose_cli_gates_ci(tmp_path, monkeypatch, capsys):
    import base64

    from anon_dagster.cli import main
    from anon_dagster.pseudonymize import open_keystore

    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", base64.b64encode(b"m" * 32).decode())
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    key = open_keystore().derive_key("ledger-linkage")
    pop = _population()
    q1, q2 = ["age", "sex", "province"], ["age", "sex", "profession"]
    r1, r2 = _five_anonymous(pop, q1), _five_anonymous(pop, q2)
    ledger = env_ledger(tmp_path / "l.sqlite", create=True)  # the CLI opens it with the same key store
    # the first release was published through the pipeline with the same linkage key
    ledger.record(release="by_province", partition="", population="patients", spec_hash="s", data_hash="h",
                  qis={}, k=5, assignment=class_assignment(r1[q1], q1, r1["patient_id"], linkage_key=key))
    data = tmp_path / "by_profession.csv"
    r2.to_csv(data, index=False)
    strict = _write_spec(tmp_path, "by_profession", q2)
    args = ["compose", strict, "--input", str(data), "--anonymized", "--ledger", str(ledger.path)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "persons below min_k = 5" in out
    assert main([*args, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["effective_k"] < 5 and result["exposed_persons"] > 0
    assert "P0" not in json.dumps(result)
    relaxed = _write_spec(tmp_path, "by_profession", q2, min_k=1)
    assert main(["compose", relaxed, "--input", str(data), "--anonymized", "--ledger", str(ledger.path)]) == 0

    # a DP release: the budget decides
    dp_spec = _write_spec(tmp_path, "counts", ["sex"], mode="aggregates")
    assert main(["compose", dp_spec, "--ledger", str(ledger.path)]) == 0
    assert "PASSED" in capsys.readouterr().out
    for year in ("1", "2"):
        ledger.record(release="counts", partition=year, population="patients", spec_hash="s", data_hash=year,
                      qis={}, k=None, epsilon_spend=(0.5, 1.0, "basic", None))
    assert main(["compose", dp_spec, "--ledger", str(ledger.path)]) == 1
    assert "budget exceeded" in capsys.readouterr().out


def test_must_show_with_the_anonymizer(tmp_path, monkeypatch, capsys):
    """The must-show case end to end: each release anonymized by the spec's own method."""
    import base64

    import yaml

    from anon_dagster.anonymize import anonymize
    from anon_dagster.cli import main
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.spec import load_spec

    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", base64.b64encode(b"n" * 32).decode())
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    pop = _population(1500, seed=11)
    q1, q2 = ["age", "sex", "province"], ["age", "sex", "profession"]
    ledger = env_ledger(tmp_path / "l.sqlite", create=True)
    specs = {}
    for name, qis in (("by_province", q1), ("by_profession", q2)):
        path = _write_spec(tmp_path, name, qis)
        raw_spec = yaml.safe_load(open(path))
        raw_spec["columns"]["age"]["hierarchy"] = {"type": "interval", "widths": [5, 10, 20]}
        raw_spec["anonymization"]["max_suppression"] = 0.05
        open(path, "w").write(yaml.safe_dump(raw_spec))
        pop.to_csv(tmp_path / f"{name}.csv", index=False)
        specs[name] = load_spec(path)
        result = anonymize(pop, specs[name])
        sizes = result.data.groupby(qis).size()
        assert sizes.min() >= 5  # each release is 5-anonymous alone
        if name == "by_province":
            key = open_keystore().derive_key("ledger-linkage")
            first = class_assignment(result.data, qis, pop.loc[result.data.index, "patient_id"], linkage_key=key)
            ledger.record(release=name, partition="", population="patients", spec_hash="s",
                          data_hash="h", qis={}, k=int(sizes.min()), assignment=first)
    # the CLI anonymizes the raw source itself and composes it with the first publication
    code = main(["compose", str(specs["by_profession"].spec_path), "--ledger", str(ledger.path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and not out["passed"]
    assert out["effective_k"] < 5 and out["exposed_persons"] > 0
