"""Run as a script by test_connect.py: through a local Spark Connect server
(``SparkSession.builder.remote("local[2]")``), read a topic with the Data Source found by name,
again after ``register`` with a pushed filter, with ``read_kafka``, and with a streaming query
into a parquet sink; print the counts as one JSON line, with the warnings ``read_kafka`` logged
below and above its large-read mark."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path


def main(bootstrap: str, topic: str, workdir: str) -> None:
    """Read ``topic`` every way through Spark Connect and print what each read saw."""
    from pyspark.sql import SparkSession

    from kafkaconsumer.spark import driver, read_kafka, register

    warnings: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record)

    logging.getLogger(driver.__name__).addHandler(Kept(logging.WARNING))
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    try:
        found = spark.read.format("kafkaconsumer").options(**options).load().count()
        register(spark, pushdown=True)
        pushed = (
            spark.read.format("kafkaconsumer")
            .options(**options)
            .option("includeHeaders", "true")
            .load()
            .where("partition = 1 AND offset >= 10")
            .where("headers IS NULL")
            .count()
        )
        on_driver = read_kafka(spark, options, progress=False).count()
        small_warned = len(warnings)
        # A mark below this read's table: the read warns that the server holds its rows.
        driver.CONNECT_WARN_BYTES = 1
        large = read_kafka(spark, options, progress=False).count()
        large_warned = ["Spark Connect server" in w.getMessage() for w in warnings]
        out = Path(workdir) / "out"
        query = (
            spark.readStream.format("kafkaconsumer")
            .options(**options)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "40")
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(Path(workdir) / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        streamed = spark.read.parquet(str(out)).select("partition", "offset").distinct().count()
        print(
            json.dumps(
                {
                    "found": found,
                    "pushed": pushed,
                    "driver": on_driver,
                    "large": large,
                    "warned": [small_warned, large_warned],
                    "streamed": streamed,
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
