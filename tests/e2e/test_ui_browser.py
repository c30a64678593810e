"""Failing checks, refusals and their evidence as a reviewer sees them: the Dagster UI and the
risk report, rendered in headless Chromium.

One ``dagster dev`` on the demo's definitions (``definitions.py``) serves every test of this
module, with two releases in its spec folder:

- ``ui_release``: 2023 fails its blocking ``k_anonymity`` check (no generalization, k = 5);
- ``yearly``: the same eight persons in 2023 and 2024 (:mod:`tests.support.linkage`), each year
  2-anonymous alone; 2023 is published, 2024 refused by the composition check (effective k = 1),
  with a sampling fraction declared so that the report estimates population uniqueness.

The runs are launched through the GraphQL API as the UI's launchpad does and run by the
instance's run launcher; the pages are driven through the DevTools protocol in one browser.
Screenshots are saved under ``test-output/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.browser import CHROMIUM, Page, chromium
from tests.support.dagster_dev import DagsterDev, dagster_dev, launch_job, wait_for_run
from tests.support.linkage import composing_release, two_years
from tests.support.releases import write_release

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make browser installs it)")]

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output"
# more than four decimals in a shown figure: a value printed unrounded
UNROUNDED = re.compile(r"\d\.\d{5,}")
# an absolute local path as a page would leak it: a POSIX folder under a root folder
LOCAL_PATH = re.compile(r"(?<![\w.:/])/(?:tmp|home|root|var|usr|opt|srv|mnt|private|Users)/")


@dataclass
class Deployment:
    """The running webserver, the browser, and the runs launched before the tests."""

    server: DagsterDev
    page: Page
    runs: dict[str, tuple[str, str]]  # "release/partition": (run id, final status)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp("ui")
    write_release(folder, name="ui_release", method="none", k=5, thresholds={"k": 5, "prosecutor_max": 0.2})
    spec = composing_release(folder, two_years())
    text = yaml.safe_load(spec.read_text())
    text["policy"]["sampling_fraction"] = 0.1
    spec.write_text(yaml.safe_dump(text, sort_keys=False))
    with dagster_dev(folder, spec.parent) as server, chromium(folder / "chromium-profile") as page:
        runs = {}
        # two processes at once at most: the failing release beside the first year
        first = {"ui_release/2023": launch_job(server, "ui_release_release", "2023"),
                 "yearly/2023": launch_job(server, "yearly_release", "2023")}
        for name, run_id in first.items():
            runs[name] = (run_id, wait_for_run(server, run_id))
        run_id = launch_job(server, "yearly_release", "2024")  # composed with the published 2023
        runs["yearly/2024"] = (run_id, wait_for_run(server, run_id))
        OUTPUT.mkdir(exist_ok=True)
        yield Deployment(server, page, runs)


def shown(deployment: Deployment, url: str, needles: list[str], name: str, timeout: float = 90) -> str:
    """The page's text once every needle is shown; its screenshot and text saved as ``name``."""
    text = deployment.page.open(url, needles, timeout=timeout)
    deployment.page.screenshot(OUTPUT / f"{name}.png")
    (OUTPUT / f"{name}.txt").write_text(text)
    missing = [n for n in needles if n not in text]
    assert not missing, f"not shown: {missing}\n{text[:3000]}"
    return text


def no_local_path(text: str, deployment: Deployment) -> None:
    """The page names no folder of this machine (the deployment's, the repository's, the home)."""
    for folder in (deployment.server.folder, REPO, Path.home()):
        assert str(folder) not in text
    assert not LOCAL_PATH.search(text), LOCAL_PATH.search(text)


def test_the_runs_end_as_their_checks_decide(deployment):
    assert {name: status for name, (_, status) in deployment.runs.items()} == {
        "ui_release/2023": "FAILURE",  # the blocking k check failed, so the run did
        "yearly/2023": "SUCCESS", "yearly/2024": "FAILURE"}
    published = deployment.server.folder / "published"
    assert not (published / "ui_release" / "2023.parquet").exists()
    assert sorted(p.name for p in (published / "yearly").glob("*.parquet")) == ["2023.parquet"]


def test_failing_check_and_its_metadata_are_shown_in_the_ui(deployment):
    url = f"{deployment.server.url}/assets/ui_release/anonymized?view=checks&checkDetail=k_anonymity"
    needles = ["k_anonymity", "Failed", "violates the threshold >= 5", "class_size_histogram",
               "small_classes", "measured", "threshold"]
    shown(deployment, url, needles, "ui_failing_check")
    assert (OUTPUT / "ui_failing_check.png").stat().st_size > 10_000


def test_a_refused_partition_shows_its_outcome_and_reasons_on_the_published_asset(deployment):
    url = f"{deployment.server.url}/assets/yearly/published?view=partitions&partition=2024"
    needles = ["outcome", "refused", "reasons", "composition", "failed_checks"]
    text = shown(deployment, url, needles, "ui_refused_partition")
    assert re.search(r"\boutcome\s+refused\b", text), text[:3000]  # the value of the outcome entry
    # the reason as the composition check gave it: persons 1 and 8 singled out across the years
    # (a markdown entry, which the page renders after the others)
    reason = r"\breasons\s+composition: effective k = 1 against 1 earlier publication"
    text = deployment.page.text_matching(reason)
    assert re.search(reason, text), text[:3000]
    assert re.search(r'\bfailed_checks\s+\[\s*"composition"\s*\]', text)
    assert "Traceback" not in text


def test_the_publication_check_failed_for_the_refused_partition(deployment):
    url = f"{deployment.server.url}/assets/yearly/published?view=checks&checkDetail=publication"
    # the list of checks loads its statuses apart from the detail: wait for the other check's too
    needles = ["publication", "Failed", "composition", "Partition", "freshness", "Succeeded"]
    text = shown(deployment, url, needles, "ui_publication_check")
    assert re.search(r"\bpublication\s+publication\s+Failed\b", text)  # the check's row in the list
    assert re.search(r"\bfreshness\s+freshness\s+Succeeded\b", text)  # the other check did not fail
    assert re.search(r"Evaluation result\s+Failed\b", text)
    assert re.search(r"\bPartition\s+2024\b", text)  # the latest execution is the refused partition's
    assert "composition: effective k = 1" in text
    assert "Traceback" not in text


def test_the_refused_run_shows_no_stack_trace(deployment):
    run_id, _ = deployment.runs["yearly/2024"]
    text = shown(deployment, f"{deployment.server.url}/runs/{run_id}", ["publication refused"], "ui_refused_run")
    assert re.search(r"Check publication failed for materialization of yearly / published", text)
    assert "Traceback" not in text


def report_page(deployment: Deployment) -> tuple[Path, str]:
    report = deployment.server.folder / "reports" / "yearly" / "2024" / "risk_report.html"
    assert report.is_file(), sorted(p.relative_to(deployment.server.folder)
                                    for p in (deployment.server.folder / "reports").rglob("*"))
    return report, deployment.page.open(report.as_uri(), ["Verdict"], timeout=30)


def test_the_report_of_the_refusal_leads_with_its_reason(deployment):
    _, text = report_page(deployment)
    deployment.page.screenshot(OUTPUT / "report_refused.png")
    first = deployment.page.evaluate(
        "Array.from(document.body.children).slice(0, 3).map(e => e.tagName + '|' + e.className + '|' + e.innerText)")
    assert first[0].startswith("H1|")
    tag, cls, banner = first[1].split("|", 2)
    assert (tag, cls) == ("P", "verdict bad") and banner.startswith("Verdict: not publishable")
    assert first[2].startswith("P||Refused because")
    reasons = deployment.page.evaluate("document.querySelector('p.verdict + p + ul').innerText")
    assert reasons.startswith("composition") and "effective k" in reasons
    # the reasons come before any section
    assert text.index("Refused because") < text.index("1. Identification and traceability")


def test_the_report_shows_population_uniqueness_as_a_table(deployment):
    report_page(deployment)
    table = deployment.page.evaluate("""(() => {
        const h = Array.from(document.querySelectorAll('h3')).find(e => e.innerText === 'Population uniqueness');
        if (!h) return null;
        let e = h.nextElementSibling;
        while (e && e.tagName !== 'TABLE' && e.tagName !== 'H3' && e.tagName !== 'H2') e = e.nextElementSibling;
        if (!e || e.tagName !== 'TABLE') return null;
        return Array.from(e.rows).map(r => Array.from(r.cells).map(c => c.innerText));
    })()""")
    assert table is not None, "no table under Population uniqueness"
    header, *rows = table
    assert header[:4] == ["model", "population uniques (share)", "population uniques", "sample uniques"]
    assert len(rows) >= 2 and rows[0][0].startswith("Dankar's rule")  # the chosen estimate, then each model
    # 2024's eight rows fall in two classes of four: no sample unique, whatever the model
    assert {r[3] for r in rows} == {"0"}
    shares = [float(r[1]) for r in rows if r[1] != "—"]
    assert shares and all(0.0 <= f <= 1.0 for f in shares)


def test_the_report_names_no_local_path_and_rounds_its_figures(deployment):
    report, text = report_page(deployment)
    assert str(report.parent) not in text
    no_local_path(text, deployment)
    assert not UNROUNDED.search(text), UNROUNDED.findall(text)[:5]
    assert re.search(r"\d\.\d{1,4}\b", text)  # figures are shown, rounded
