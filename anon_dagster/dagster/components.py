"""``AnonReleaseComponent``: the dg Component that turns release specs into Dagster definitions.

Registered through the ``dagster_dg_cli.registry_modules`` entry point (``dg list components``);
used from a ``defs.yaml`` (docs/dagster.md) or from Python with :func:`load_release_definitions`.
"""

import os
from pathlib import Path

from dagster import Component, ComponentLoadContext, Definitions, Model, Resolvable

from ..release.run_storage import private_dagster_home
from ..spec import load_spec, load_specs
from .assets import ReleaseDefinitions, build_release
from .io_manager import AnonParquetIOManager
from .resources import LedgerResource, keystore_from_env
from .translator import ReleaseTranslator

CONFIG_ENV = "ANON_DAGSTER_CONFIG"


class AnonReleaseComponent(Component, Resolvable, Model):
    """Privacy-gated releases from release specs: one asset group per spec, shared resources.

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

    def get_translator(self) -> ReleaseTranslator:
        """The translator of every release; override in a subclass to change conventions."""
        return ReleaseTranslator()

    def releases(self, base: Path, translator: ReleaseTranslator | None = None) -> list[ReleaseDefinitions]:
        """Every spec loaded (a folder's problems all reported at once) and built into a release."""
        where = self.spec_paths(base)
        specs = [load_spec(p) for p in where] if isinstance(where, list) else load_specs(where)
        t = translator or self.get_translator()
        return [build_release(s, reports_dir=self.reports_dir, automate=self.automate, translator=t) for s in specs]

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        return self.build_definitions(Path(context.path))

    def build_definitions(self, base: Path | None = None, translator: ReleaseTranslator | None = None) -> Definitions:
        """The Definitions of every release, with the key store, IO manager and ledger they share.

        ``$DAGSTER_HOME``, where Dagster keeps the run storage and the event log of these
        releases, is made owner-only first (:func:`~anon_dagster.release.run_storage.private_dagster_home`).
        """
        private_dagster_home()
        releases = self.releases(base or Path.cwd(), translator)
        keystore = keystore_from_env()
        return Definitions(
            assets=[a for r in releases for a in r.assets],
            asset_checks=[c for r in releases for c in r.checks],
            jobs=[r.job for r in releases],
            schedules=[r.schedule for r in releases if r.schedule is not None],
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
