"""Opening the key store where any failure must be told without its detail.

An orchestrator shows an exception's message in its UI and event log. The key store's own errors
(:class:`~anon_dagster.errors.SecretError`) never hold key material or the passphrase; any other
failure while opening (a parse error of the key file, a decoding error) may quote the file's
content, so it is told by its type only.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import SecretError
from .base import ENV_KEYSTORE, ENV_PASSPHRASE, KeyStore
from .locate import open_keystore


def open_keystore_guarded(path: str | Path | None = None, passphrase: str | None = None) -> KeyStore:
    """:func:`~.locate.open_keystore`, with any failure a :class:`SecretError` free of content:
    the key store's own as it is, any other ``the key store cannot be opened (<type>)``."""
    try:
        return open_keystore(path, passphrase=passphrase)
    except SecretError:
        raise
    except Exception as exc:  # the message may quote file content: keep only the type
        raise SecretError(f"the key store cannot be opened ({type(exc).__name__})") from None


def keystore_variables() -> dict[str, str | None]:
    """The settings ``path`` and ``passphrase`` as the environment variables that hold them, each
    None when its variable is unset (so the key store applies its own default rather than
    failing on a variable that is not set)."""
    return {"path": ENV_KEYSTORE if os.environ.get(ENV_KEYSTORE) else None,
            "passphrase": ENV_PASSPHRASE if os.environ.get(ENV_PASSPHRASE) else None}


__all__ = ["keystore_variables", "open_keystore_guarded"]
