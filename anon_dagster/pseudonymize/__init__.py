"""Keyed pseudonymization with a key store kept apart from the data, and audited reversal.

Public API:

* :func:`open_keystore`, :func:`init_keystore`, :class:`KeyStore` (``derive_key``, ``rotate``,
  ``versions``), backends :class:`FileKeyBackend`, :class:`EnvKeyBackend`,
  :class:`ExternalKeyBackend` (KMS / Vault interface), :class:`VaultTransitBackend`;
* :func:`pseudonymize` (a table, as its spec declares) → ``(DataFrame, PseudonymizationSummary)``,
  :func:`pseudonymize_values` (one column), :func:`pseudonym_pattern` (regex for data contracts),
  :func:`publication_label` (what a pseudonym of scope ``release`` is bound to);
* :func:`reidentify` (AES-SIV and tokens only, logged), :class:`AuditLog`,
  :func:`verify_audit_log`;
* after a rotation: :func:`hmac_bridge`, :func:`rekey_aes_siv`, :func:`rekey_token_vault`.

Pseudonymized data is still personal data.
"""

from .audit import AuditLog, AuditTampered, verify_audit_log
from .keystore import (
    EnvKeyBackend,
    ExternalKeyBackend,
    FileKeyBackend,
    KeyBackend,
    KeyInfo,
    KeyStore,
    check_location,
    init_keystore,
    open_keystore,
)
from .keystore.vault import VaultTransitBackend
from .methods import normalize_identifiers, pseudonym_pattern, publication_label
from .reversal import Reversal, ReversalRefused, reidentify
from .rotation import hmac_bridge, rekey_aes_siv, rekey_token_vault
from .table import (
    PERSONAL_DATA_NOTICE,
    ColumnSummary,
    PseudonymizationSummary,
    pseudonymize,
    pseudonymize_values,
)

__all__ = [
    "PERSONAL_DATA_NOTICE", "AuditLog", "AuditTampered", "ColumnSummary", "EnvKeyBackend",
    "ExternalKeyBackend", "FileKeyBackend", "KeyBackend", "KeyInfo", "KeyStore",
    "PseudonymizationSummary", "Reversal", "ReversalRefused", "check_location", "hmac_bridge",
    "init_keystore", "normalize_identifiers", "open_keystore", "publication_label", "pseudonym_pattern",
    "pseudonymize", "pseudonymize_values", "reidentify", "rekey_aes_siv", "rekey_token_vault",
    "VaultTransitBackend", "verify_audit_log",
]
