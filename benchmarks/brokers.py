"""The broker a benchmark runs against: ``--broker apache|tansu|HOST:PORT[,...]``.

``tansu`` starts the embedded Tansu broker (the default, as before); ``apache`` starts Apache
Kafka through the test harness (``benchmarks/harness/apache_kafka.py``: the jars fetched by Maven on
first use; ``KAFKACONSUMER_KAFKA_VERSION`` picks the version) with the full JIT, so that the
broker is not the bottleneck; anything else is taken as the bootstrap servers of a running
cluster. ``--bootstrap`` is the older spelling of the last form.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BenchBroker(NamedTuple):
    """Where the benchmark connects, and how to name it in the report."""

    bootstrap: str
    label: str


def add_broker_arguments(ap: argparse.ArgumentParser) -> None:
    """Add ``--broker`` (and the older ``--bootstrap``) to ``ap``."""
    ap.add_argument(
        "--broker",
        default=None,
        help="apache (start Apache Kafka), tansu (start the embedded broker, the "
        "default) or the bootstrap servers of a running cluster",
    )
    ap.add_argument("--bootstrap", help="same as --broker HOST:PORT")


def choice(args: argparse.Namespace) -> str:
    """The ``--broker`` value, ``--bootstrap`` folded in."""
    if args.bootstrap and args.broker and args.broker != args.bootstrap:
        raise SystemExit("give --broker or --bootstrap, not both")
    return str(args.broker or args.bootstrap or "tansu")


@contextmanager
def bench_broker(which: str) -> Iterator[BenchBroker]:
    """Start (or name) the broker for one benchmark run; stop what was started afterwards."""
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    if which == "tansu":
        from kafkaconsumer.embedded import EmbeddedBroker

        with EmbeddedBroker() as tansu:
            yield BenchBroker(tansu.bootstrap_servers, "embedded Tansu")
        return
    if which == "apache":
        from benchmarks.harness.apache_kafka import KafkaCluster

        # The full JIT: these numbers measure clients, not a broker running on C1 only.
        with KafkaCluster(jvm_options=(), extra_config={"num.io.threads": "4"}) as cluster:
            yield BenchBroker(cluster.bootstrap_servers, f"Apache Kafka {cluster.version}")
        return
    yield BenchBroker(which, which)
