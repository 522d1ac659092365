"""Plots and a markdown table from a recorded benchmark run.

    python benchmarks/plot.py                                  # every file in benchmarks/results
    python benchmarks/plot.py benchmarks/results/consume-idle-2026-11-23.json --out docs/img

A result file is JSON: ``machine``, ``broker``, ``command`` and ``date`` describe the run;
``rows`` holds one object per measured client and topic (``size``, ``partitions``, ``codec``,
``client``, ``records_per_s``, ``cpu_us_per_record``, ``peak_rss_mb``), as ``consume.py``
prints them in its final table (the ``ceiling`` rows are the broker's serve ceiling). For
``NAME.json`` this writes ``NAME.png`` (records/s and CPU per record by client, one group of bars
per topic) into ``--out`` and prints the markdown table with each client's speed relative to
this client's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLIENT_ORDER = (
    "kafkaconsumer",
    "kafkaconsumer-arrow",
    "kafka-python",
    "aiokafka",
    "confluent-kafka",
)


def load(path: Path) -> dict[str, Any]:
    """Read one result file and check that it has what the plot needs."""
    data = dict(json.loads(path.read_text(encoding="utf-8")))
    for key in ("machine", "broker", "rows"):
        if key not in data:
            raise ValueError(f"{path}: missing {key!r}")
    return data


def _topics(rows: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    seen: list[tuple[int, int, str]] = []
    for r in rows:
        key = (int(r["size"]), int(r["partitions"]), str(r["codec"]))
        if key not in seen:
            seen.append(key)
    return seen


def table(data: dict[str, Any]) -> str:
    """A markdown table of the run: records/s, CPU per record and ours x per client."""
    rows = data["rows"]
    lines = [
        "| value size | partitions | codec | client | records/s | CPU µs/record | "
        "peak RSS MB | kafkaconsumer is x times faster |",
        "|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for size, parts, codec in _topics(rows):
        group = [
            r for r in rows if (r["size"], r["partitions"], r["codec"]) == (size, parts, codec)
        ]
        ours = next((r["records_per_s"] for r in group if r["client"] == "kafkaconsumer"), None)
        for r in group:
            ratio = (
                ""
                if r["client"] in ("ceiling", "kafkaconsumer") or not ours
                else f"{ours / r['records_per_s']:.2f}"
            )
            rss = "" if r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:.0f}"
            lines.append(
                f"| {size} | {parts} | {codec} | {r['client']} | "
                f"{r['records_per_s']:,.0f} | {r['cpu_us_per_record']:.2f} | {rss} | "
                f"{ratio} |"
            )
    return "\n".join(lines)


def plot(data: dict[str, Any], out: Path) -> None:
    """Bar charts of records/s (top) and CPU µs/record (bottom) per client, grouped by topic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = [r for r in data["rows"] if r["client"] != "ceiling"]
    topics = _topics(rows)
    clients = [c for c in CLIENT_ORDER if any(r["client"] == c for r in rows)]
    # One row per metric, wide enough for every topic's group of bars.
    fig, axes = plt.subplots(2, 1, figsize=(max(11.0, 1.5 * len(topics)), 8.0))
    width = 0.8 / max(1, len(clients))
    for metric, ax, label in (
        ("records_per_s", axes[0], "records/s (higher is better)"),
        ("cpu_us_per_record", axes[1], "CPU µs per record (lower is better)"),
    ):
        for i, client in enumerate(clients):
            values = []
            for topic in topics:
                match = [
                    r[metric]
                    for r in rows
                    if r["client"] == client and (r["size"], r["partitions"], r["codec"]) == topic
                ]
                values.append(match[0] if match else 0)
            ax.bar([t + i * width for t in range(len(topics))], values, width, label=client)
        ax.set_xticks([t + width * (len(clients) - 1) / 2 for t in range(len(topics))])
        ax.set_xticklabels([f"{s} B\n{p} partitions\n{c}" for s, p, c in topics], fontsize=8)
        ax.yaxis.set_major_formatter(
            matplotlib.ticker.StrMethodFormatter(
                "{x:,.0f}" if metric == "records_per_s" else "{x:,.1f}"
            )
        )
        ax.set_ylabel(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{data['machine']}; broker: {data['broker']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Plot each result file given (default: all of benchmarks/results)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="result files (JSON)")
    ap.add_argument(
        "--out",
        type=Path,
        default=HERE.parent / "docs" / "img",
        help="directory for the PNG files (default: docs/img)",
    )
    args = ap.parse_args(argv)
    files = args.files or sorted((HERE / "results").glob("*.json"))
    if not files:
        ap.error("no result files")
    args.out.mkdir(parents=True, exist_ok=True)
    for path in files:
        data = load(path)
        plot(data, args.out / f"{path.stem}.png")
        sys.stdout.write(f"{path.name}: {args.out / (path.stem + '.png')}\n\n{table(data)}\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
