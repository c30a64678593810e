"""Tests of anon_dagster.risk."""
