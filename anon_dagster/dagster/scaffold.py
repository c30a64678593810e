"""``dg scaffold defs anon_dagster.AnonReleaseComponent NAME``: ``defs.yaml`` (or ``component.py``)
and the starter of :mod:`anon_dagster.spec.starter`; ``dg check defs`` passes right away."""

from __future__ import annotations

from pathlib import Path

from dagster import Scaffolder, ScaffoldRequest

from ..spec.starter import (
    COMPONENT_PY,
    DEFS_YAML,
    EXAMPLE_ROWS,
    SPECS_DIR,
    example_rows,
    write_example_data,
    write_starter,
)
from ..spec.starter import write_new as _write_new


class AnonReleaseScaffolder(Scaffolder):
    """Writes ``defs.yaml`` (``config_dir: specs``), a starter spec and the CSV it reads."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        target = Path(request.target_path)
        if request.scaffold_format == "python":
            module, _, name = request.type_name.rpartition(".")
            _write_new(target / "component.py", COMPONENT_PY.format(module=module, name=name, specs=SPECS_DIR))
        elif request.append:
            with (request.target_path).open("a", encoding="utf-8") as f:
                f.write("---\n" + DEFS_YAML.format(type_name=request.type_name, specs=SPECS_DIR))
            target = target.parent
        else:
            _write_new(target / "defs.yaml", DEFS_YAML.format(type_name=request.type_name, specs=SPECS_DIR))
        write_starter(target)


__all__ = ["EXAMPLE_ROWS", "AnonReleaseScaffolder", "example_rows", "write_example_data"]
