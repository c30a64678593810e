"""Tests of anon_dagster.pseudonymize."""
