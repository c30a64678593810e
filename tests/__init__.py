"""Tests of anon_dagster; sub-packages mirror the source tree."""
