"""Tests of schema-registry records: framing, registry client, deserializers, Arrow columns."""
