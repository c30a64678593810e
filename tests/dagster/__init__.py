"""Tests of anon_dagster.dagster."""
