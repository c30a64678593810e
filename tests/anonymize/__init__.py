"""Tests of anon_dagster.anonymize."""
