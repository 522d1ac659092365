"""Decode framed Avro values with Spark's own ``from_avro`` (the spark-avro jar), as an oracle.

Run as ``python -m tests.formats.spark_avro_oracle`` with JSON on stdin: ``jar`` (the
spark-avro jar), ``reader`` (the reader schema) and ``rows``, each ``{"value": <hex of the
framed value>, "writer": <its writer schema>}``. Prints one JSON object per row (Spark's
``to_json`` of the decoded struct), in the order given. It runs in its own process because a
jar must be on the driver's class path when its JVM starts.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    """Read the request, decode each row with from_avro, print the results."""
    request = json.load(sys.stdin)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.avro.functions import from_avro

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("spark-avro-oracle")
        .config("spark.jars", request["jar"])
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        reader = request["reader"]
        out = []
        for index, row in enumerate(request["rows"]):
            df = spark.createDataFrame(
                [(index, bytes.fromhex(row["value"]))], "i int, value binary"
            )
            # The 5-byte frame stripped; from_avro reads with the writer schema into the reader's.
            body = F.expr("substring(value, 6, length(value) - 5)")
            decoded = df.select(
                F.to_json(from_avro(body, row["writer"], {"avroSchema": reader})).alias("j")
            )
            out.append(decoded.collect()[0]["j"])
        for line in out:
            print(line)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
