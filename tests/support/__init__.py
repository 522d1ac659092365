"""Test-only support code: the scripted in-process fake broker (:mod:`tests.support.fake_broker`),
a fake clock (:mod:`tests.support.mock_time`), record data our producer never writes
(:mod:`tests.support.record_encoder`) and a consumer with fake collaborators
(:mod:`tests.support.consumers`). The Apache Kafka harness and the fault proxies, which the
benchmarks use too, are in ``benchmarks/harness/``."""
