"""``anon-dagster attack``: the pipeline with control records set aside, three attacks, exit status."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster.cli import main

ZIPS = [f"Z{n:04d}" for n in range(60)]


def _write(tmp: Path, *, method: str = "global", k: int = 5, rows: int = 3000, patients: bool = False,
           population: bool = False) -> Path:
    rng = np.random.default_rng(11)
    n = rows
    data = pd.DataFrame({
        "age": rng.integers(18, 90, n), "zip": rng.choice(ZIPS, n), "sex": rng.choice(["F", "M"], n),
        "diagnosis": rng.choice(["Dx_alpha", "Dx_beta", "Dx_gamma", "Dx_delta"], n),
    })
    columns = {
        "age": "{role: quasi, hierarchy: {type: interval, widths: [5, 10, 20]}}",
        "zip": "{role: quasi, hierarchy: {type: mask, keep: [3, 2]}}",
        "sex": "{role: quasi}",
        "diagnosis": "{role: sensitive}",
    }
    if patients:  # two visits per patient: rows linked by the published pseudonym
        data.insert(0, "patient_id", [f"PAT{i // 2:06d}" for i in range(n)])
        columns = {"patient_id": "{role: identifier, pseudonymize: {method: hmac}}", **columns}
    data.to_csv(tmp / "data.csv", index=False)
    policy = ""
    if population:
        extra = pd.DataFrame({"age": rng.integers(18, 90, 2 * n), "zip": rng.choice(ZIPS, 2 * n),
                              "sex": rng.choice(["F", "M"], 2 * n),
                              "diagnosis": rng.choice(["Dx_alpha", "Dx_beta"], 2 * n)})
        pd.concat([data.drop(columns=["patient_id"], errors="ignore"), extra]).to_csv(tmp / "pop.csv", index=False)
        policy = "policy: {population: {path: pop.csv}}\n"
    text = ("release: visits\nsource: {path: data.csv}\ncolumns:\n"
            + "".join(f"  {c}: {v}\n" for c, v in columns.items())
            + f"anonymization: {{method: {method}, k: {k}, max_suppression: 0.05}}\n" + policy
            + "publication: {path: out/{release}.parquet}\n")
    spec = tmp / "visits.yaml"
    spec.write_text(text)
    return spec


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_attack_json_main_control_and_every_attack(tmp_path, capsys):
    spec = _write(tmp_path)
    code, out, err = _cli(capsys, "attack", spec, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["release"] == "visits" and result["method"] == "global" and result["rows"] == 3000
    assert result["control"]["source"] == "withheld" and result["control"]["rows"] == 1000
    assert result["released_rows"] <= 2000
    names = [(a["attack"], a["secret"]) for a in result["attacks"]]
    assert names == [("singling_out_univariate", None), ("singling_out_multivariate", None),
                     ("linkability", None), ("inference", "diagnosis")]
    for a in result["attacks"]:
        assert set(a) >= {"main", "control", "baseline", "residual", "targets", "queries", "complete"}
        assert a["targets"]["control"] == 1000
    # k-anonymous on the QIs: nobody singled out
    multi = result["attacks"][1]
    assert multi["main"]["rate"] == 0.0 and multi["control"]["rate"] == 0.0
    assert not any(z in out for z in ZIPS) and "Dx_" not in out
    assert not (tmp_path / "out").exists()  # nothing written


def test_attack_text_is_a_table_and_the_figures_repeat(tmp_path, capsys):
    spec = _write(tmp_path, method="none")
    code, out, err = _cli(capsys, "attack", spec, "--targets", "300")
    assert code == 0, err
    assert "attacks on release 'visits', method none" in out
    assert "residual" in out and "inference[diagnosis]" in out and "300/300" in out
    again = _cli(capsys, "attack", spec, "--targets", "300")
    assert again[1] == out


def test_max_residual_fails_an_unprotected_release(tmp_path, capsys):
    spec = _write(tmp_path, method="none")
    code, out, err = _cli(capsys, "attack", spec, "--json", "--max-residual", "0.1", "--targets", "400")
    assert code == 1, err
    worst = max(a["residual"]["risk"] for a in json.loads(out)["attacks"])
    assert worst > 0.1
    assert _cli(capsys, "attack", spec, "--max-residual", "1", "--targets", "400")[0] == 0


def test_persons_linked_by_a_pseudonym_count_once(tmp_path, capsys, master_key):
    spec = _write(tmp_path, patients=True)
    code, out, err = _cli(capsys, "attack", spec, "--json", "--targets", "0")
    assert code == 0, err
    result = json.loads(out)
    linked = result["attacks"][1]
    # 1,500 patients: 500 withheld (whole patients), the others released; targets are patients
    assert result["control"]["rows"] == 1000
    assert linked["targets"]["control"] == 500
    assert linked["targets"]["main"] <= 1000
    assert "PAT0" not in out


def test_the_population_gives_the_control_records(tmp_path, capsys):
    spec = _write(tmp_path, population=True)
    code, out, err = _cli(capsys, "attack", spec, "--json", "--targets", "500")
    assert code == 0, err
    result = json.loads(out)
    assert result["control"]["source"] == "population" and result["control"]["rows"] == 6000
    assert result["released_rows"] > 2500  # nothing withheld


def test_a_budget_cuts_and_says_so(tmp_path, capsys):
    spec = _write(tmp_path)
    code, out, _ = _cli(capsys, "attack", spec, "--json", "--max-queries", "100")
    assert code == 0
    cut = [a for a in json.loads(out)["attacks"] if not a["complete"]]
    assert cut and all("query budget of 100" in a["cut"] for a in cut)


@pytest.mark.parametrize("args, words", [
    (["--secret", "nosuch"], "'nosuch' is not a published column"),
    (["--targets", "-1"], "--targets must not be negative"),
    (["--max-residual", "2"], "--max-residual must lie in [-1, 1]"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args, words):
    spec = _write(tmp_path)
    code, out, err = _cli(capsys, "attack", spec, *args)
    assert code == 2 and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


def test_a_missing_spec_is_one_line_exit_2(tmp_path, capsys):
    code, _, err = _cli(capsys, "attack", tmp_path / "nope.yaml")
    assert code == 2 and len(err.strip().splitlines()) == 1
