"""What the benchmarks and the tests share: Apache Kafka clusters started on this machine
(``apache_kafka``), the fault proxies in front of them (``proxy``, ``tls_proxy``), the chaos
workload, scenarios and faults (``chaos_*``), and small cluster operations (``cluster_ops``).

The tests import from here; nothing here imports from ``tests/``.
"""
