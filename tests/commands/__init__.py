"""Tests of the anon-dagster command line (anon_dagster.commands)."""
