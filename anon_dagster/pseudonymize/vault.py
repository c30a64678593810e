"""HashiCorp Vault Transit as a key backend (kept at this path; the code is in :mod:`.keystore.vault`)."""

from .keystore.vault import ENV_VAULT_MOUNT, VaultTransitBackend

__all__ = ["ENV_VAULT_MOUNT", "VaultTransitBackend"]
