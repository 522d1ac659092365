"""Batch reads through ``format("kafkaconsumer")`` and ``read_kafka`` on a real broker and a
real Spark (``local[2]``)."""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

import pytest

from kafkaconsumer.admin import KafkaAdminClient
from kafkaconsumer.structs import TopicPartition
from tests.helpers import unique_name

from .conftest import create_topic, df_rows, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _reader(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.read.format("kafkaconsumer").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _expected(topic: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    counters: dict[int, int] = {}
    out = []
    for p, k, v, h in rows:
        off = counters.get(p, 0)
        counters[p] = off + 1
        out.append((topic, p, off, k, v, 0, list(h or [])))
    return out


def test_every_codec_with_headers_and_spark_schema(spark: Any, broker: Any) -> None:
    topic = unique_name("sp-codec")
    create_topic(broker.bootstrap_servers, topic, len(CODECS))
    rows_by_codec = []
    for p, codec in enumerate(CODECS):
        rows = [
            (
                p,
                None if i % 9 == 0 else b"k%d" % i,
                None if i % 13 == 0 else b"v%d" % i * 3,
                [("h", b"%d" % i), ("n", None)] if i % 2 else [],
            )
            for i in range(200)
        ]
        produce(broker.bootstrap_servers, topic, rows, compression=codec)
        rows_by_codec.extend(rows)
    df = _reader(spark, broker.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    got = df_rows(df)
    assert got == sorted(_expected(topic, rows_by_codec), key=lambda t: (t[1], t[2]))
    plain = _reader(spark, broker.bootstrap_servers, subscribe=topic)
    assert "headers" not in plain.columns and plain.count() == len(rows_by_codec)
    # read_kafka on the driver: the same rows as the Data Source.
    from kafkaconsumer.spark import read_kafka

    driver = read_kafka(
        spark,
        {
            "kafka.bootstrap.servers": broker.bootstrap_servers,
            "subscribe": topic,
            "includeHeaders": "true",
        },
        progress=False,
    )
    assert driver.schema == df.schema
    assert df_rows(driver) == got
    ts = df.selectExpr("min(timestamp) as lo").collect()[0]["lo"]
    assert ts is not None and abs(ts.timestamp() - time.time()) < 3600


def test_json_offsets_timestamps_min_partitions_and_assign(spark: Any, broker: Any) -> None:
    topic = unique_name("sp-ranges")
    create_topic(broker.bootstrap_servers, topic, 2)
    first: list[tuple[int, None, bytes, list[tuple[str, bytes]]]] = [
        (i % 2, None, b"a%d" % i, []) for i in range(100)
    ]
    produce(broker.bootstrap_servers, topic, first)
    time.sleep(0.05)  # the second half must carry a later timestamp than the first
    cut_ms = int(time.time() * 1000)
    time.sleep(0.05)
    second: list[tuple[int, None, bytes, list[tuple[str, bytes]]]] = [
        (i % 2, None, b"b%d" % i, []) for i in range(100)
    ]
    produce(broker.bootstrap_servers, topic, second)
    bs = broker.bootstrap_servers
    ranged = _reader(
        spark,
        bs,
        subscribe=topic,
        startingOffsets=f'{{"{topic}":{{"0":10,"1":-2}}}}',
        endingOffsets=f'{{"{topic}":{{"0":20,"1":-1}}}}',
    )
    rows = df_rows(ranged)
    assert [r[2] for r in rows if r[1] == 0] == list(range(10, 20))
    assert [r[2] for r in rows if r[1] == 1] == list(range(100))
    by_ts = _reader(spark, bs, subscribe=topic, startingTimestamp=str(cut_ms))
    assert sorted(r[4] for r in df_rows(by_ts)) == sorted(v for _, _, v, _ in second)
    split = _reader(
        spark,
        bs,
        subscribePattern=topic.replace("-", ".") + "$",
        minPartitions="7",
        maxRecordsPerPartition="30",
    )
    assert split.rdd.getNumPartitions() >= 7
    split_rows = df_rows(split)
    assert len(split_rows) == 200 and len({(r[1], r[2]) for r in split_rows}) == 200
    one = _reader(spark, bs, assign=f'{{"{topic}":[1]}}')
    assert {r[1] for r in df_rows(one)} == {1} and one.count() == 100


def test_small_ranges_are_read_together_and_large_ones_apart(spark: Any, broker: Any) -> None:
    # A task of a Python data source costs Spark more than reading a few hundred thousand
    # small records: small ranges share one. The rows are the same either way.
    bs = broker.bootstrap_servers
    topic = unique_name("sp-pack")
    create_topic(bs, topic, 4)
    produce(bs, topic, [(i % 4, None, b"v%d" % i, []) for i in range(400)])
    packed = _reader(spark, bs, subscribe=topic)
    apart = _reader(spark, bs, subscribe=topic, minRecordsPerPartition="0")
    halves = _reader(spark, bs, subscribe=topic, minRecordsPerPartition="200")
    assert packed.rdd.getNumPartitions() == 1
    assert apart.rdd.getNumPartitions() == 4  # a task per partition, as Spark's source
    assert halves.rdd.getNumPartitions() == 2
    at_least = _reader(spark, bs, subscribe=topic, minPartitions="3")
    assert at_least.rdd.getNumPartitions() >= 3
    rows = df_rows(apart)
    assert len(rows) == 400
    assert df_rows(packed) == rows and df_rows(halves) == rows and df_rows(at_least) == rows


def test_each_action_resolves_latest_again(spark: Any, broker: Any) -> None:
    # Spark's source resolves earliest/latest for every action; so does this one, although
    # Spark plans a Python data source's partitions once per DataFrame.
    bs = broker.bootstrap_servers
    topic = unique_name("sp-again")
    create_topic(bs, topic, 2)
    produce(bs, topic, [(0, None, b"a%d" % i, []) for i in range(20)])
    df = _reader(spark, bs, subscribe=topic, minPartitions="3")
    fixed = _reader(spark, bs, subscribe=topic, endingOffsets=f'{{"{topic}":{{"0":20,"1":0}}}}')
    assert df.count() == 20 and fixed.count() == 20
    # Partition 1 was empty when the DataFrame was made: its task still reads what came since.
    produce(bs, topic, [(i % 2, None, b"b%d" % i, []) for i in range(10)])
    rows = df_rows(df)
    assert [(r[1], r[2]) for r in rows] == [(0, o) for o in range(25)] + [(1, o) for o in range(5)]
    assert fixed.count() == 20  # offsets given as numbers stay as given


def test_read_kafka_frees_the_jvm_side_of_dropped_reads(
    spark: Any, broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # py4j keeps the methods called on a JVM handle in the handle, so a dropped DataFrame's
    # handle (and the driver JVM's copy of its rows) lives until Python's cyclic collector
    # runs; the next read_kafka runs it once earlier reads of RELEASE_AFTER_BYTES are alive.
    # The collector is off meanwhile, so that only that can free the handle here.
    from kafkaconsumer.spark import driver, read_kafka

    topic = unique_name("sp-release")
    create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(50)])
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        # Below the threshold the collector is left to run by itself.
        monkeypatch.setattr(driver, "RELEASE_AFTER_BYTES", 1 << 40)
        small = read_kafka(spark, options, progress=False)
        assert small.count() == 50
        handle = weakref.ref(small._jdf)
        del small
        assert handle() is not None  # held by py4j's cycle only
        assert read_kafka(spark, options, progress=False).count() == 50
        assert handle() is not None
        gc.collect()
        monkeypatch.setattr(driver, "RELEASE_AFTER_BYTES", 1)
        first = read_kafka(spark, options, progress=False)
        assert first.count() == 50
        handle = weakref.ref(first._jdf)
        total = first.selectExpr("count(*)")
        assert total.first()[0] == 50
        derived = weakref.ref(total._jdf)
        del first, total
        assert handle() is not None and derived() is not None
        second = read_kafka(spark, options, progress=False)
        assert handle() is None and derived() is None
        assert second.count() == 50
        # A DataFrame still held keeps its JVM side through the next read.
        kept = weakref.ref(second._jdf)
        third = read_kafka(spark, options, progress=False)
        assert kept() is not None
        assert second.count() == third.count() == 50
    finally:
        if was_enabled:
            gc.enable()


def test_fail_on_data_loss_after_delete_records(spark: Any, broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu has no DeleteRecords")
    topic = unique_name("sp-loss")
    create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(50)])
    bs = broker.bootstrap_servers
    # The range is fixed from offset 0 while records below 20 are deleted.
    ranges = f'{{"{topic}":{{"0":0}}}}'
    with KafkaAdminClient({"bootstrap.servers": bs}) as admin:
        admin.delete_records({TopicPartition(topic, 0): 20})
    strict = _reader(spark, bs, subscribe=topic, startingOffsets=ranges)
    with pytest.raises(Exception, match=rf"data loss in {topic}-0: offsets \[0, 20\)"):
        strict.collect()
    lenient = _reader(spark, bs, subscribe=topic, startingOffsets=ranges, failOnDataLoss="false")
    assert [r[2] for r in df_rows(lenient)] == list(range(20, 50))


def test_read_committed_skips_aborted_transactions(spark: Any, broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip("Tansu does not implement transactions")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = unique_name("sp-txn")
    create_topic(broker.bootstrap_servers, topic, 1)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": unique_name("txn")}
    )
    producer.init_transactions(30)
    for txn, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, value=b"t%d-%d" % (txn, i), partition=0)
        # Flushed first: an abort would otherwise drop what is still queued locally.
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.flush(30)
    bs = broker.bootstrap_servers
    committed = _reader(spark, bs, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    values = sorted(r[4] for r in df_rows(committed))
    assert values == sorted(b"t%d-%d" % (t, i) for t in (0, 2, 4) for i in range(10))
    everything = _reader(spark, bs, subscribe=topic)
    assert everything.count() == 50


def test_bad_options_raise_naming_the_option(spark: Any, broker: Any) -> None:
    # Each bad option goes through the same parse in reader() (tests/spark/test_options.py
    # covers them one by one); one through Spark shows the error reaches the user.
    bs = broker.bootstrap_servers
    with pytest.raises(Exception, match="(?i)option startingOffsetz is not supported"):
        _reader(spark, bs, subscribe="x", startingOffsetz="earliest").collect()
