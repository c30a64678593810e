"""Tests of anon_dagster.engine."""
