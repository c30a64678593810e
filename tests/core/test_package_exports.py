"""What ``import anon_dagster`` gives: the risk entry points and the dg component, loaded on use.

The core never imports Dagster: importing the package (or any core module) must not load it,
while ``anon_dagster.AnonReleaseComponent`` is the component ``dg`` lists and scaffolds.
"""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_importing_the_package_and_its_core_does_not_load_dagster():
    out = _run("import sys, anon_dagster, anon_dagster.release.pipeline, anon_dagster.risk; "
               "print(sorted(m for m in sys.modules if m == 'dagster' or m.startswith('dagster.')))")
    assert out == "[]"


def test_the_component_is_exported_at_the_top_under_the_name_dg_uses():
    out = _run("import anon_dagster; from anon_dagster.dagster.components import AnonReleaseComponent as C; "
               "print(anon_dagster.AnonReleaseComponent is C, 'AnonReleaseComponent' in dir(anon_dagster))")
    assert out == "True True"


def test_an_unknown_name_is_an_attribute_error():
    out = _run("import anon_dagster\ntry:\n    anon_dagster.NoSuchThing\nexcept AttributeError as e:\n    print(e)")
    assert "NoSuchThing" in out
