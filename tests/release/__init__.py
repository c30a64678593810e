"""Tests of anon_dagster.release."""
