"""Row-for-row parity with Spark's own Kafka source: the same topics read through
``format("kafka")`` (the connector from Maven Central) and ``format("kafkaconsumer")`` with the
same options give the same schema and the same value in every column of every row."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.producer import KafkaProducer
from tests.helpers import unique_name

from .conftest import create_topic, produce, require_spark_connector

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
HOUR_MS = 3600 * 1000


def read(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> Any:
    """A batch DataFrame of ``fmt`` with ``options``."""
    r = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(df: Any) -> list[tuple[Any, ...]]:
    """Every column of every row, as plain values, in (topic, partition, offset) order."""
    out = []
    for r in df.collect():
        out.append(tuple(_plain(v) for v in r))
    i_topic, i_part, i_off = (df.columns.index(c) for c in ("topic", "partition", "offset"))
    return sorted(out, key=lambda t: (t[i_topic], t[i_part], t[i_off]))


def _plain(v: Any) -> Any:
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return [tuple(_plain(x) for x in h) for h in v]
    return v


def assert_parity(spark: Any, bootstrap: str, options: dict[str, str]) -> int:
    """Both sources agree on ``options``; returns the number of rows."""
    theirs = read(spark, "kafka", bootstrap, options)
    ours = read(spark, "kafkaconsumer", bootstrap, options)
    assert ours.schema == theirs.schema, options
    expected = rows(theirs)
    got = rows(ours)
    assert len(got) == len(expected), options
    for a, b in zip(got, expected, strict=True):
        assert a == b, (options, a, b)
    return len(got)


@pytest.fixture(scope="module")
def topics(spark: Any, broker: Any) -> dict[str, Any]:
    """Topics of awkward data: every codec (null keys, tombstones, records with and without
    headers, a null header value), LogAppendTime, transactions with aborts, and explicit
    CreateTime timestamps out of offset order."""
    require_spark_connector()
    bs = broker.bootstrap_servers
    codecs = unique_name("par-codec")
    create_topic(bs, codecs, len(CODECS))
    for p, codec in enumerate(CODECS):
        produce(
            bs,
            codecs,
            [
                (
                    p,
                    None if i % 7 == 0 else b"k%d" % i,
                    None if i % 11 == 0 else b"v%d" % i * 5,
                    [("h", b"%d" % i), ("n", None)] if i % 3 == 0 else [],
                )
                for i in range(120)
            ],
            compression=codec,
        )
    log_append = unique_name("par-logappend")
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        admin.create_topics({log_append: 2}, configs={"message.timestamp.type": "LogAppendTime"})
    produce(
        bs,
        log_append,
        [(i % 2, b"k", b"la%d" % i, [("x", b"y")] if i % 2 else []) for i in range(60)],
    )

    txn = unique_name("par-txn")
    create_topic(bs, txn, 2)
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bs, "transactional.id": unique_name("par-txn-id")}
    )
    producer.init_transactions(30)
    for t, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(txn, key=None, value=b"t%d-%d" % (t, i), partition=i % 2)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.flush(30)

    timed = unique_name("par-timed")
    create_topic(bs, timed, 2)
    base = int(time.time() * 1000) - 10 * HOUR_MS
    kp = KafkaProducer({"bootstrap.servers": bs, "linger.ms": 5})
    try:
        futures = []
        for i in range(100):
            # Mostly growing, with every tenth record an hour older than its neighbours.
            ts = base + i * 360_000 - (HOUR_MS if i % 10 == 5 else 0)
            futures.append(kp.send(timed, value=b"ts%d" % i, partition=i % 2, timestamp_ms=ts))
        kp.flush()
        for f in futures:
            f.get(30)
    finally:
        kp.close()
    return {"codecs": codecs, "log_append": log_append, "txn": txn, "timed": timed, "base": base}


def test_codecs_null_keys_tombstones_and_headers(spark: Any, broker: Any, topics: Any) -> None:
    bs, t = broker.bootstrap_servers, topics["codecs"]
    n = assert_parity(spark, bs, {"subscribe": t, "includeHeaders": "true"})
    assert n == 120 * len(CODECS)
    assert assert_parity(spark, bs, {"subscribe": t}) == n
    ours = read(spark, "kafkaconsumer", bs, {"subscribe": t, "includeHeaders": "true"})
    # Records without headers: null, not an empty array (filters on it mean the same).
    assert ours.where("headers IS NULL").count() == 80 * len(CODECS)


def test_log_append_time_and_transactions(spark: Any, broker: Any, topics: Any) -> None:
    bs = broker.bootstrap_servers
    n = assert_parity(spark, bs, {"subscribe": topics["log_append"], "includeHeaders": "true"})
    assert n == 60
    for level, count in (("read_committed", 30), ("read_uncommitted", 50)):
        options = {"subscribe": topics["txn"], "kafka.isolation.level": level}
        assert assert_parity(spark, bs, options) == count


def test_offset_ranges_assign_and_pattern(spark: Any, broker: Any, topics: Any) -> None:
    bs, t = broker.bootstrap_servers, topics["codecs"]
    starting = {"0": 10, "1": -2, "2": 0, "3": 119, "4": 5}
    ending = {"0": 50, "1": -1, "2": 1, "3": 120, "4": -1}
    options = {
        "subscribe": t,
        "startingOffsets": f'{{"{t}": {_obj(starting)}}}',
        "endingOffsets": f'{{"{t}": {_obj(ending)}}}',
        "includeHeaders": "true",
    }
    assert assert_parity(spark, bs, options) == 40 + 120 + 1 + 1 + 115
    assert assert_parity(spark, bs, {"assign": f'{{"{t}":[1,3]}}'}) == 240
    pattern = {"subscribePattern": t[:-3].replace("-", "[-]") + ".*", "includeHeaders": "true"}
    assert assert_parity(spark, bs, pattern) == 120 * len(CODECS)


def test_timestamps(spark: Any, broker: Any, topics: Any) -> None:
    bs, t, base = broker.bootstrap_servers, topics["timed"], topics["base"]
    cut = base + 3 * HOUR_MS
    end = base + 7 * HOUR_MS
    assert assert_parity(spark, bs, {"subscribe": t, "startingTimestamp": str(cut)}) > 0
    by_partition = {
        "subscribe": t,
        "startingOffsetsByTimestamp": f'{{"{t}": {{"0": {cut}, "1": {base}}}}}',
        "endingOffsetsByTimestamp": f'{{"{t}": {{"0": {end}, "1": {end}}}}}',
    }
    assert assert_parity(spark, bs, by_partition) > 0
    ending = {"subscribe": t, "startingTimestamp": str(cut), "endingTimestamp": str(end)}
    assert assert_parity(spark, bs, ending) > 0


def _obj(d: dict[str, int]) -> str:
    return "{" + ",".join(f'"{k}":{v}' for k, v in d.items()) + "}"


def test_read_kafka_gives_the_rows_of_sparks_source_from_one_topic_or_several(
    spark: Any, broker: Any, topics: Any
) -> None:
    from kafkaconsumer.spark import read_kafka

    bs = broker.bootstrap_servers
    several = ",".join([topics["codecs"], topics["log_append"], topics["timed"]])
    for subscribe in (topics["codecs"], several):
        options = {"subscribe": subscribe, "includeHeaders": "true"}
        theirs = read(spark, "kafka", bs, options)
        ours = read_kafka(spark, {"kafka.bootstrap.servers": bs, **options}, progress=False)
        assert ours.schema == theirs.schema, subscribe
        assert rows(ours) == rows(theirs), subscribe
        for topic in subscribe.split(","):
            picked = ours.filter(ours.topic == topic).count()
            assert picked == theirs.filter(theirs.topic == topic).count() > 0, topic
