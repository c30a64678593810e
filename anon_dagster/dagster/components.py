"""``AnonReleaseComponent``: the dg Component that turns release specs into Dagster definitions.

Registered through the ``dagster_dg_cli.registry_modules`` entry point (``dg list components``);
used from a ``defs.yaml`` (``dg scaffold defs anon_dagster.AnonReleaseComponent
NAME`` writes one, with a starter spec: :mod:`.scaffold`; docs/dagster.md) or from Python with
:func:`load_release_definitions`.

A broken spec never hides the others: every valid spec of the folder is loaded, and each file
that does not validate becomes its own group ``<name>/spec`` whose failing blocking check
``spec_valid`` lists every problem of the file (:mod:`.broken_specs`), with one warning per file
when the definitions load. ``anon-dagster validate`` stays strict.
"""

import os
from pathlib import Path

from dagster import (
    Component,
    ComponentLoadContext,
    Definitions,
    Model,
    Resolvable,
    get_dagster_logger,
    in_process_executor,
    scaffold_with,
)

from ..errors import Problem, SpecError, UserError
from ..release.run_storage import private_dagster_home
from ..spec.loading import SpecFile, load_spec_files
from .assets import ReleaseDefinitions, build_release
from .broken_specs import build_broken_spec, group_names, warning_line
from .io_manager import AnonParquetIOManager
from .resources import LedgerResource, keystore_from_env
from .scaffold import AnonReleaseScaffolder
from .translator import ReleaseTranslator

CONFIG_ENV = "ANON_DAGSTER_CONFIG"

log = get_dagster_logger("anon_dagster")


@scaffold_with(AnonReleaseScaffolder)
class AnonReleaseComponent(Component, Resolvable, Model):
    """Privacy-gated releases from release specs: one asset group per spec, shared resources.

    A spec that does not validate becomes its own group ``<name>/spec`` with a failing blocking
    check ``spec_valid`` listing every problem of the file; the other specs load as usual.

    Attributes:
        config_dir: folder of release specs (``*.yaml``); default ``$ANON_DAGSTER_CONFIG``, else
            ``assets_config/``; relative to the component's folder (from Python: the working directory).
        specs: explicit spec files instead of a folder.
        storage_dir: where intermediate tables are stored (default under ``$DAGSTER_HOME``).
        reports_dir: where risk reports and transformation records go (may hold {release};
            default ``reports/<release>`` beside the spec folder).
        ledger_path: the publication ledger (default ``$ANON_DAGSTER_LEDGER``, else under
            ``$DAGSTER_HOME``).
        automate: put ``AutomationCondition.eager() & all_deps_blocking_checks_passed()`` on
            the published asset.
    """

    config_dir: str | None = None
    specs: list[str] | None = None
    storage_dir: str | None = None
    reports_dir: str | None = None
    ledger_path: str | None = None
    automate: bool = False

    def spec_paths(self, base: Path) -> list[Path] | Path:
        """The spec files, or the folder holding them, resolved against ``base``."""
        if self.specs:
            return [_anchor(s, base) for s in self.specs]
        return _anchor(self.config_dir or os.environ.get(CONFIG_ENV) or "assets_config", base)

    def spec_files(self, base: Path) -> list[SpecFile]:
        """Every spec file, each loaded on its own (a broken one with every problem of the file).

        A folder that does not exist is one line naming it (a :class:`~anon_dagster.errors.SpecError`).
        """
        where = self.spec_paths(base)
        if isinstance(where, Path) and not where.is_dir():
            key = CONFIG_ENV if not self.config_dir and os.environ.get(CONFIG_ENV) else "config_dir"
            raise SpecError([Problem(str(where), key, "no such folder of release specs")])
        return load_spec_files(where)

    def get_translator(self) -> ReleaseTranslator:
        """The translator of every release; override in a subclass to change conventions."""
        return ReleaseTranslator()

    def releases(self, base: Path, translator: ReleaseTranslator | None = None) -> list[ReleaseDefinitions]:
        """Every valid spec built into a release (broken specs are left out: see :meth:`build_definitions`)."""
        return self._build(self.spec_files(base), translator or self.get_translator())[0]

    def _build(self, files: list[SpecFile], t: ReleaseTranslator) -> tuple[list[ReleaseDefinitions], list[SpecFile]]:
        releases, broken = [], []
        for f in files:
            if f.spec is None:
                broken.append(f)
                continue
            try:
                releases.append(build_release(f.spec, reports_dir=self.reports_dir, automate=self.automate, translator=t))
            except UserError as exc:  # a spec that validates but cannot be built is shown as broken too
                error = exc if isinstance(exc, SpecError) else SpecError([Problem(str(f.path), "", str(exc))])
                broken.append(SpecFile(f.path, error=error, release=f.release))
        return releases, broken

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        return self.build_definitions(Path(context.path))

    def build_definitions(self, base: Path | None = None, translator: ReleaseTranslator | None = None) -> Definitions:
        """The Definitions of every release, with the key store, IO manager and ledger they share,
        and a group ``<name>/spec`` with a failing ``spec_valid`` check for each broken spec.

        ``$DAGSTER_HOME``, where Dagster keeps the run storage and the event log of these
        releases, is made owner-only first (:func:`~anon_dagster.release.run_storage.private_dagster_home`).
        """
        private_dagster_home()
        t = translator or self.get_translator()
        releases, broken = self._build(self.spec_files(base or Path.cwd()), t)
        taken = {t.group_name(r.spec) for r in releases} | {r.spec.release for r in releases}
        placeholders = []
        for f, name in zip(broken, group_names(broken, taken), strict=True):
            log.warning(warning_line(f))
            placeholders.append(build_broken_spec(f, name))
        keystore = keystore_from_env()
        return Definitions(
            assets=[a for r in releases for a in r.assets] + [p[0] for p in placeholders],
            asset_checks=[c for r in releases for c in r.checks] + [p[1] for p in placeholders],
            jobs=[r.job for r in releases],
            schedules=[r.schedule for r in releases if r.schedule is not None],
            sensors=[s for r in releases for s in r.sensors],
            # every run in one process, UI materializations of a selection too: a step pays
            # no process start-up, and the tables it hands on stay on this machine
            executor=in_process_executor,
            resources={
                "keystore": keystore,
                "io_manager": AnonParquetIOManager(base_dir=self.storage_dir, keystore=keystore),
                "ledger": LedgerResource(path=self.ledger_path),
            },
        )


def _anchor(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base / p)


def load_release_definitions(config_dir: str | Path | None = None, *, translator: ReleaseTranslator | None = None,
                             **options: object) -> Definitions:
    """The Definitions of every spec in ``config_dir`` (default ``$ANON_DAGSTER_CONFIG``); ``options``
    are the component's attributes."""
    component = AnonReleaseComponent(config_dir=str(config_dir) if config_dir else None, **options)
    return component.build_definitions(Path.cwd(), translator)


__all__ = ["AnonReleaseComponent", "load_release_definitions"]
