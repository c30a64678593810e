"""``AnonReleaseComponent``: the dg Component that turns release specs into Dagster definitions, and
its scaffolder; which files are specs and which build: :mod:`anon_dagster.spec.discovery`
(docs/dagster.md)."""

from pathlib import Path
from typing import Any, Literal

import dagster as dg

from ..release.governance.scheduled_retention import retained
from ..release.run_storage import private_dagster_home
from ..spec import broken as spec_broken
from ..spec.discovery import CONFIG_ENV, build_each, find_spec_files, spec_location
from ..spec.loading import SpecFile
from ..spec.starter import scaffold
from .assets import ReleaseDefinitions, build_release
from .io_manager import AnonParquetIOManager
from .resources import EngineResource, LedgerResource, keystore_from_env
from .retention import retention_schedule
from .translator import ReleaseTranslator

log = dg.get_dagster_logger("anon_dagster")


def shared_resources(storage_dir: str | None = None, ledger_path: str | None = None) -> dict[str, Any]:
    """The resources every release shares: the key store (by reference), the IO manager, the ledger."""
    keystore = keystore_from_env()
    return {"keystore": keystore, "io_manager": AnonParquetIOManager(base_dir=storage_dir, keystore=keystore),
            "ledger": LedgerResource(path=ledger_path)}


def broken_spec_definitions(broken: SpecFile, name: str) -> dg.Definitions:
    """The asset ``<name>/spec`` of a broken spec file and its failing blocking check ``spec_valid``
    (names and messages: :mod:`anon_dagster.spec.broken`)."""
    message = spec_broken.broken_message(broken)
    key = dg.AssetKey([name, spec_broken.SPEC_STEP])
    metadata = {"spec": dg.MetadataValue.path(str(broken.path)),
                "problems": dg.MetadataValue.md(spec_broken.problems_markdown(broken))}

    @dg.asset(key=key, group_name=name, description=message, metadata=metadata, kinds={"yaml"})
    def spec(context: dg.AssetExecutionContext) -> None:
        raise dg.Failure(description=message, allow_retries=False)

    @dg.asset_check(asset=key, name=spec_broken.SPEC_CHECK, blocking=True, description=message)
    def spec_valid(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, description=message,
                                metadata=metadata)

    return dg.Definitions(assets=[spec], asset_checks=[spec_valid])


class AnonReleaseScaffolder(dg.Scaffolder):
    """``dg scaffold defs``: ``defs.yaml`` (or ``component.py``) and the starter
    (:func:`~anon_dagster.spec.starter.scaffold`)."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        scaffold(Path(request.target_path), request.type_name, python=request.scaffold_format == "python",
                 append=bool(request.append))


@dg.scaffold_with(AnonReleaseScaffolder)
class AnonReleaseComponent(dg.Component, dg.Resolvable, dg.Model):
    """Privacy-gated releases from release specs: one asset group per spec, shared resources; a
    spec that does not validate is its own group ``<name>/spec`` with a failing ``spec_valid``.

    Attributes (docs/dagster.md): ``config_dir`` (default ``$ANON_DAGSTER_CONFIG``, else
    ``assets_config/``), ``specs``, ``storage_dir``, ``reports_dir``, ``ledger_path``, ``automate``;
    the engine: ``engine`` (``pandas``, the default, or ``spark``), ``spark_master``,
    ``max_driver_cells``, ``max_worker_cells``, ``scratch_dir`` (an :class:`~.resources.EngineResource` bound as ``engine``).
    """

    config_dir: str | None = None
    specs: list[str] | None = None
    storage_dir: str | None = None
    reports_dir: str | None = None
    ledger_path: str | None = None
    automate: bool = False
    engine: Literal["pandas", "spark"] = "pandas"
    spark_master: str = "local[2]"
    max_driver_cells: int = 50_000_000
    max_worker_cells: int = 20_000_000
    scratch_dir: str | None = None

    def engine_resource(self) -> EngineResource | None:
        """The engine the assets run on; None for the pandas engine (the assets need no resource then)."""
        if self.engine == "pandas":
            return None
        return EngineResource(engine=self.engine, spark_master=self.spark_master,
                              max_driver_cells=self.max_driver_cells, max_worker_cells=self.max_worker_cells,
                              scratch_dir=self.scratch_dir)

    def spec_paths(self, base: Path) -> list[Path] | Path:
        """The spec files, or the folder holding them, resolved against ``base``."""
        return spec_location(base, self.config_dir, self.specs)

    def spec_files(self, base: Path) -> list[SpecFile]:
        """Every spec file, each loaded on its own (:func:`~anon_dagster.spec.discovery.find_spec_files`)."""
        return find_spec_files(base, self.config_dir, self.specs)

    def get_translator(self) -> ReleaseTranslator:
        """The translator of every release; override in a subclass to change conventions."""
        return ReleaseTranslator()

    def releases(self, base: Path, translator: ReleaseTranslator | None = None) -> list[ReleaseDefinitions]:
        """Every valid spec built into a release (broken specs left out)."""
        return self._build(base, translator, self.engine != "pandas")[0]

    def _build(self, base: Path, t: ReleaseTranslator | None,
               with_engine: bool) -> tuple[list[ReleaseDefinitions], list[SpecFile]]:
        t = t or self.get_translator()
        return build_each(self.spec_files(base), lambda spec: build_release(
            spec, reports_dir=self.reports_dir, automate=self.automate, translator=t, with_engine=with_engine))

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return self.build_definitions(Path(context.path))

    def build_definitions(self, base: Path | None = None,
                          translator: ReleaseTranslator | None = None,
                          engine: EngineResource | None = None) -> dg.Definitions:
        """The Definitions of every release with the resources they share, and a group
        ``<name>/spec`` for each broken spec; ``$DAGSTER_HOME`` is made owner-only first. ``engine``
        (default :meth:`engine_resource`) is the engine the steps run on."""
        private_dagster_home()
        engine = engine or self.engine_resource()
        releases, broken = self._build(base or Path.cwd(), translator, engine is not None)
        taken = {r.translator.group_name(r.spec) for r in releases} | {r.spec.release for r in releases}
        for f in broken:
            log.warning(spec_broken.warning_line(f))
        placeholders = [broken_spec_definitions(f, name)
                        for f, name in zip(broken, spec_broken.group_names(broken, taken), strict=True)]
        specs = [r.spec for r in releases]
        retention = [retention_schedule(specs, base_dir=self.storage_dir, ledger_path=self.ledger_path)] \
            if retained(specs) else []
        # every run in one process: a step pays no process start-up, its tables stay here
        shared = dg.Definitions(schedules=retention, executor=dg.in_process_executor,
                                resources={**shared_resources(self.storage_dir, self.ledger_path),
                                           **({"engine": engine} if engine is not None else {})})
        return dg.Definitions.merge(*(r.definitions() for r in releases), *placeholders, shared)


def load_release_definitions(config_dir: str | Path | None = None, *, translator: ReleaseTranslator | None = None,
                             engine: str | EngineResource | None = None, **options: object) -> dg.Definitions:
    """The Definitions of every spec in ``config_dir``; ``options`` are the component's attributes;
    ``engine`` the engine's name, or an :class:`~.resources.EngineResource` (on a session of your own)."""
    named = {"engine": engine} if isinstance(engine, str) else {}
    component = AnonReleaseComponent(config_dir=str(config_dir) if config_dir else None, **named, **options)
    return component.build_definitions(Path.cwd(), translator, engine if isinstance(engine, EngineResource) else None)


__all__ = ["CONFIG_ENV", "AnonReleaseComponent", "AnonReleaseScaffolder", "broken_spec_definitions",
           "load_release_definitions", "shared_resources"]
