"""Run as a script by test_local_cluster.py: read a topic through the Data Source on
``local-cluster[2,1,1024]`` (two executor JVMs with their own Python workers) and print one
JSON line per partition and offset, plus which executors ran tasks."""

from __future__ import annotations

import json
import os
import sys


def main(bootstrap: str, topic: str, avro_topic: str, registry_url: str) -> None:
    """Read ``topic`` (and ``avro_topic``, Avro keys and values framed for the registry at
    ``registry_url``, into typed columns) and print the rows as JSON."""
    from pyspark.sql import SparkSession

    from kafkaconsumer.spark import register

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("kafkaconsumer-local-cluster")
        .config("spark.ui.enabled", "false")
        .config("spark.executor.memory", "512m")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.task.maxFailures", "1")
        # The executors import this checkout's package (PYTHONPATH as the driver's).
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel(os.environ.get("CLUSTER_JOB_LOG", "ERROR"))
        register(spark, pushdown=True)
        df = (
            spark.read.format("kafkaconsumer")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("minPartitions", "4")
            .load()
        )
        rows = df.selectExpr(
            "partition", "offset", "hex(key) as key", "hex(value) as value"
        ).collect()
        # The parent of a Python worker is its executor's pyspark daemon: one per executor.
        daemons = df.rdd.mapPartitions(lambda _: [__import__("os").getppid()]).collect()
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        # Pushed filters narrow the ranges the executors read; headers are null when absent.
        pushed = (
            spark.read.format("kafkaconsumer")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .load()
            .where("partition IN (0, 2) AND offset >= 10 AND offset < 60")
            .selectExpr("partition", "offset", "headers IS NULL AS no_headers")
            .collect()
        )
        typed = (
            spark.read.format("kafkaconsumer")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", avro_topic)
            .option("minPartitions", "4")
            .option("keyFormat", "avro")
            .option("valueFormat", "avro")
            .option("schema.registry.url", registry_url)
            .load()
            .selectExpr("partition", "offset", "to_json(key) AS key", "to_json(value) AS value")
            .collect()
        )
        print(
            json.dumps(
                {
                    "typed": [[r["partition"], r["offset"], r["key"], r["value"]] for r in typed],
                    "pushed": [[r["partition"], r["offset"], r["no_headers"]] for r in pushed],
                    "rows": [[r["partition"], r["offset"], r["key"], r["value"]] for r in rows],
                    "daemons": sorted(set(daemons)),
                    "executors": executors,
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
