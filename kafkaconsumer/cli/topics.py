"""``kafkaconsumer topics list|describe`` (Java ``kafka-topics.sh --list/--describe``)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import add_admin_args, admin_client, print_json, print_table

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register the ``topics`` command and its subcommands."""
    p = sub.add_parser(
        "topics",
        help="list and describe topics",
        description="List topics, or describe their partitions and configs.",
    )
    tsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    lst = tsub.add_parser(
        "list",
        help="every topic and its partition count",
        description="List every topic with its partition count.",
    )
    add_admin_args(lst)
    lst.add_argument(
        "--include-internal",
        action="store_true",
        help="also list internal topics (__consumer_offsets, ...)",
    )
    lst.set_defaults(run=_list)
    desc = tsub.add_parser(
        "describe",
        help="partitions, leaders, replicas, ISR and configs",
        description="Describe topics: each partition's leader, replicas and in-sync "
        "replicas, and the topic's configuration (values that differ from the "
        "broker default unless --all-configs).",
    )
    add_admin_args(desc)
    desc.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC",
        help="topic to describe (repeatable; default: every topic)",
    )
    desc.add_argument(
        "--all-configs", action="store_true", help="show every config value, defaults included"
    )
    desc.set_defaults(run=_describe)


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        topics = admin.list_topics(include_internal=args.include_internal)
    if args.json:
        print_json([{"topic": t, "partitions": n} for t, n in sorted(topics.items())])
    else:
        print_table(None, ["TOPIC", "PARTITIONS"], sorted(topics.items()))
    return 0


def _describe(args: argparse.Namespace) -> int:
    from kafkaconsumer.admin import ConfigResource
    from kafkaconsumer.errors import UnsupportedVersionError

    with admin_client(args) as admin:
        topics = admin.describe_topics(args.topic)
        configs: dict[str, dict[str, Any]] | None
        try:
            described = admin.describe_configs([ConfigResource("topic", t) for t in topics])
            configs = {
                r.name: {k: e for k, e in entries.items() if args.all_configs or not e.is_default}
                for r, entries in described.items()
            }
        except UnsupportedVersionError:
            configs = None  # the broker has no DescribeConfigs; say so below
    if args.json:
        print_json(
            [
                {
                    "topic": d.name,
                    "topic_id": d.topic_id,
                    "internal": d.internal,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "leader": p.leader,
                            "replicas": list(p.replicas),
                            "isr": list(p.isr),
                            "offline_replicas": list(p.offline_replicas),
                        }
                        for p in d.partitions
                    ],
                    "configs": None
                    if configs is None
                    else {k: e.value for k, e in configs.get(d.name, {}).items()},
                }
                for d in topics.values()
            ]
        )
        return 0
    for d in topics.values():
        rf = max((len(p.replicas) for p in d.partitions), default=0)
        if configs is None:
            shown = "(the broker does not describe configs)"
        else:
            shown = (
                ",".join(
                    f"{k}={'<sensitive>' if e.sensitive else e.value}"
                    for k, e in configs.get(d.name, {}).items()
                )
                or "-"
            )
        print_table(
            f"Topic: {d.name}  TopicId: {d.topic_id or '-'}  "
            f"PartitionCount: {len(d.partitions)}  ReplicationFactor: {rf}  "
            f"Configs: {shown}",
            ["PARTITION", "LEADER", "REPLICAS", "ISR", "OFFLINE"],
            [
                (
                    p.partition,
                    p.leader if p.leader >= 0 else "none",
                    ",".join(map(str, p.replicas)),
                    ",".join(map(str, p.isr)),
                    ",".join(map(str, p.offline_replicas)) or None,
                )
                for p in d.partitions
            ],
        )
    return 0
