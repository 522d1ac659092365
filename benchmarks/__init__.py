"""Benchmarks of kafkaconsumer against other Python Kafka clients (see each module)."""
