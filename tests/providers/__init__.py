"""Terraform providers the tests run for real (each run by terraform as a provider binary)."""
