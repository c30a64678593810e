"""Sub-commands of ``anon-dagster``: one module each, exposing ``register(subparsers)``.

A module's ``register`` adds its parser and sets ``handler=`` to a function taking the parsed
arguments and returning an exit code.
"""
