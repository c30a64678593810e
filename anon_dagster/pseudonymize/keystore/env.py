"""Master keys from the environment (``ANON_DAGSTER_MASTER_KEY``), for containers whose secret manager injects them."""

from __future__ import annotations

import base64
import binascii

from ...errors import SecretError
from .base import ENV_MASTER_KEY, MASTER_KEY_BYTES, _MemoryKeys


class EnvKeyBackend(_MemoryKeys):
    """Master keys from ``ANON_DAGSTER_MASTER_KEY``: ``<base64>`` or ``1:<b64>,2:<b64>,...``.

    Each key decodes to at least 32 random bytes. Rotation happens in the secret manager that
    sets the variable (append ``N:<b64>``); the data keeps naming the version it was made with.
    """

    kind = "environment"

    def __init__(self, text: str, variable: str = ENV_MASTER_KEY):
        keys: dict[int, bytes] = {}
        parts = [p.strip() for p in text.strip().split(",") if p.strip()]
        if not parts:
            raise SecretError(f"{variable} is set but empty")
        for i, part in enumerate(parts):
            head, sep, body = part.partition(":")
            if sep:
                label = head[1:] if head[:1] in "vV" else head
                if not label.isdigit() or int(label) < 1:
                    raise SecretError(f"{variable}: entry {i + 1} must be '<version>:<base64 key>' with a version >= 1")
                version = int(label)
            else:
                if len(parts) > 1:
                    raise SecretError(f"{variable}: with several keys, write each as '<version>:<base64 key>'")
                version, body = 1, part
            try:
                key = base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError):
                # the value itself is never echoed: it is (or is meant to be) a key
                raise SecretError(f"{variable}: key version {version} is not valid base64") from None
            if len(key) < MASTER_KEY_BYTES:
                raise SecretError(
                    f"{variable}: key version {version} has {len(key)} bytes; at least {MASTER_KEY_BYTES} random bytes are required"
                )
            if version in keys:
                raise SecretError(f"{variable}: key version {version} is given twice")
            keys[version] = key
        super().__init__(keys, {v: None for v in keys})
        self.variable = variable

    def describe(self) -> str:
        return f"environment variable {self.variable}"
