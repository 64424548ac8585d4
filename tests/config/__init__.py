"""Tests of hyperframes.config: TOML schema, validation and the factory."""
