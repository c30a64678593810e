"""Tests of anon_dagster.demo."""
