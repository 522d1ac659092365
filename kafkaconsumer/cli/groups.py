"""``kafkaconsumer groups ...`` (Java ``kafka-consumer-groups.sh``): list, describe, lag,
reset-offsets, delete and delete-offsets. ``describe`` also describes share groups (Java
``kafka-share-groups.sh --describe``): members, assignments, start offsets and lag.

``reset-offsets`` only shows the new offsets unless ``--execute`` is given, and refuses a
group that has members, as the Java tool does.
"""

from __future__ import annotations

import argparse
import re
import time
from datetime import datetime
from typing import Any

from ._common import CommandError, add_admin_args, admin_client, print_json, print_table

__all__ = ["add_parser", "parse_duration_ms", "parse_datetime_ms"]

_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (``PnDTnHnMnS``, as Java's ``--by-duration``) in milliseconds."""
    m = _DURATION.match(text.strip())
    if not m or text.strip().upper() in ("P", "PT", "-P", "-PT") or text.strip().endswith("T"):
        raise CommandError(
            f"--by-duration expects an ISO-8601 duration such as PT10M or P1DT2H, got {text!r}"
        )
    ms = ((int(m["d"] or 0) * 24 + int(m["h"] or 0)) * 60 + int(m["m"] or 0)) * 60_000 + int(
        float(m["s"] or 0) * 1000
    )
    return -ms if m["sign"] else ms


def parse_datetime_ms(text: str) -> int:
    """An ISO-8601 date-time (``2024-05-01T12:00:00``, optionally with a zone such as ``Z``
    or ``+02:00``; without one it is local time, as in Java) in epoch milliseconds."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(
            f"--to-datetime expects an ISO-8601 date-time such as "
            f"2024-05-01T12:00:00Z, got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


def _group_args(p: argparse.ArgumentParser, verb: str) -> None:
    p.add_argument(
        "--group",
        action="append",
        required=True,
        metavar="GROUP",
        help=f"group to {verb} (repeatable)",
    )


def add_parser(sub: Any) -> None:
    """Register the ``groups`` command and its subcommands."""
    p = sub.add_parser(
        "groups",
        help="list, describe, reset and delete consumer groups",
        description="Inspect and manage consumer groups.",
    )
    gsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    lst = gsub.add_parser(
        "list",
        help="every group with its type and state",
        description="List every group the cluster knows, with its type "
        "(classic, consumer or share), protocol type and state.",
    )
    add_admin_args(lst)
    lst.set_defaults(run=_list)

    desc = gsub.add_parser(
        "describe",
        help="state, protocol, members and their assignments",
        description="Describe groups: state, type, protocol or assignor, and each member "
        "with its assigned partitions, then per partition the committed offset, end offset "
        "and lag (classic and consumer-protocol groups) or the share-partition start offset, "
        "end offset and lag (share groups).",
    )
    add_admin_args(desc)
    _group_args(desc, "describe")
    desc.set_defaults(run=_describe)

    lag = gsub.add_parser(
        "lag",
        help="committed offset, end offset and lag per partition",
        description="Show, for each partition the group has committed or is assigned, the "
        "committed offset, the end offset (high watermark) and the lag.",
    )
    add_admin_args(lag)
    lag.add_argument("--group", required=True, metavar="GROUP", help="the group")
    lag.set_defaults(run=_lag)

    reset = gsub.add_parser(
        "reset-offsets",
        help="move a group's committed offsets (dry run by default)",
        description="Compute new committed offsets for an inactive group and, with "
        "--execute, commit them. Without --execute nothing changes.",
    )
    add_admin_args(reset)
    reset.add_argument("--group", required=True, metavar="GROUP", help="the group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    scope.add_argument(
        "--all-topics",
        action="store_true",
        help="every partition the group has a committed offset for",
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest offset")
    to.add_argument("--to-latest", action="store_true", help="the end offset")
    to.add_argument(
        "--to-offset",
        type=int,
        metavar="N",
        help="this offset (kept within the earliest and end offsets)",
    )
    to.add_argument(
        "--to-datetime",
        metavar="ISO-8601",
        help="the first offset at or after this time, e.g. 2024-05-01T12:00:00Z",
    )
    to.add_argument(
        "--by-duration",
        metavar="PnDTnHnMnS",
        help="the first offset at or after this long ago, e.g. PT30M",
    )
    to.add_argument(
        "--shift-by", type=int, metavar="N", help="move the committed offset by N (negative: back)"
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="only show the new offsets (the default)"
    )
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.set_defaults(run=_reset)

    delete = gsub.add_parser(
        "delete",
        help="delete inactive groups and their offsets",
        description="Delete groups that have no members, with their committed offsets.",
    )
    add_admin_args(delete, json_flag=False)
    _group_args(delete, "delete")
    delete.set_defaults(run=_delete)

    doff = gsub.add_parser(
        "delete-offsets",
        help="delete a group's committed offsets for some partitions",
        description="Delete a group's committed offsets for topics it no longer consumes.",
    )
    add_admin_args(doff, json_flag=False)
    doff.add_argument("--group", required=True, metavar="GROUP", help="the group")
    doff.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    doff.set_defaults(run=_delete_offsets)


def _topic_partitions(admin: Any, specs: list[str]) -> list[Any]:
    """``TOPIC`` (every partition) or ``TOPIC:0,2`` as TopicPartitions."""
    from kafkaconsumer.structs import TopicPartition

    out: list[TopicPartition] = []
    whole: list[str] = []
    for spec in specs:
        topic, sep, parts = spec.rpartition(":") if ":" in spec else (spec, "", "")
        if sep:
            try:
                out.extend(TopicPartition(topic, int(p)) for p in parts.split(",") if p)
            except ValueError:
                raise CommandError(f"--topic expects TOPIC or TOPIC:P,P..., got {spec!r}") from None
        else:
            whole.append(spec)
    if whole:
        for d in admin.describe_topics(whole).values():
            out.extend(TopicPartition(d.name, p.partition) for p in d.partitions)
    return sorted(set(out))


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        groups = admin.list_groups()
    if args.json:
        print_json(
            [
                {
                    "group": g.group_id,
                    "type": g.type,
                    "protocol_type": g.protocol_type,
                    "state": g.state,
                }
                for g in groups
            ]
        )
    else:
        print_table(
            None,
            ["GROUP", "TYPE", "PROTOCOL-TYPE", "STATE"],
            [(g.group_id, g.type, g.protocol_type or None, g.state) for g in groups],
        )
    return 0


def _lag_rows(admin: Any, group: str, extra: Any = ()) -> list[dict[str, Any]]:
    """Committed, end offset and lag of each partition the group committed or holds."""
    from kafkaconsumer.admin import LATEST

    committed = admin.list_consumer_group_offsets(group)
    tps = sorted(set(committed) | set(extra))
    ends = (
        {tp: r.offset for tp, r in admin.list_offsets({tp: LATEST for tp in tps}).items()}
        if tps
        else {}
    )
    rows = []
    for tp in tps:
        om = committed.get(tp)
        end = ends.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed_offset": om.offset if om else None,
                "end_offset": end,
                "lag": end - om.offset if om is not None and end is not None else None,
            }
        )
    return rows


def _print_lag(group: str, rows: list[dict[str, Any]], owner: dict[Any, str]) -> None:
    from kafkaconsumer.structs import TopicPartition

    print_table(
        f"Group {group}: committed offsets and lag",
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER"],
        [
            (
                r["topic"],
                r["partition"],
                r["committed_offset"],
                r["end_offset"],
                r["lag"],
                owner.get(TopicPartition(r["topic"], r["partition"])),
            )
            for r in rows
        ],
    )


def _share_rows(admin: Any, group: str, assigned: Any) -> list[dict[str, Any]]:
    """Start offset, end offset and lag of each partition the share group has state for or
    has assigned; the lag is the broker's (records from the start offset not yet settled)."""
    from kafkaconsumer.admin import LATEST

    starts = admin.list_share_group_offsets(group)
    tps = sorted(set(starts) | set(assigned))
    ends = (
        {tp: r.offset for tp, r in admin.list_offsets({tp: LATEST for tp in tps}).items()}
        if tps
        else {}
    )
    rows = []
    for tp in tps:
        info = starts.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "start_offset": info.start_offset if info else None,
                "end_offset": ends.get(tp),
                "lag": info.lag if info else None,
            }
        )
    return rows


def _describe_share(admin: Any, groups: list[str]) -> list[Any]:
    """The share groups ``groups``: (description, offset rows) each."""
    out: list[Any] = []
    if not groups:
        return out
    for g in admin.describe_share_groups(groups).values():
        assigned = [tp for m in g.members for tp in m.assignment]
        out.append((g, _share_rows(admin, g.group_id, assigned) if g.state != "Dead" else []))
    return out


def _share_json(g: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "group": g.group_id,
        "type": "share",
        "state": g.state,
        "assignor": g.assignor,
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "coordinator": g.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "member_epoch": m.member_epoch,
                "rack_id": m.rack_id,
                "subscribed_topics": list(m.subscribed_topics),
                "assignment": [[tp.topic, tp.partition] for tp in m.assignment],
            }
            for m in g.members
        ],
        "offsets": rows,
    }


def _print_share(g: Any, rows: list[dict[str, Any]]) -> None:
    from kafkaconsumer.structs import TopicPartition

    print_table(
        f"Group: {g.group_id}  Type: share  State: {g.state}  Assignor: {g.assignor or '-'}  "
        f"Coordinator: {g.coordinator}  GroupEpoch: {g.group_epoch}  "
        f"AssignmentEpoch: {g.assignment_epoch}",
        ["MEMBER-ID", "CLIENT-ID", "HOST", "MEMBER-EPOCH", "ASSIGNMENT"],
        [
            (m.member_id, m.client_id, m.host, m.member_epoch, _partitions_text(m.assignment))
            for m in g.members
        ],
    )
    # Several members may share a partition: list them all.
    owners: dict[Any, list[str]] = {}
    for m in g.members:
        for tp in m.assignment:
            owners.setdefault(tp, []).append(m.member_id)
    print_table(
        f"Group {g.group_id}: share-partition start offsets and lag",
        ["TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBERS"],
        [
            (
                r["topic"],
                r["partition"],
                r["start_offset"],
                r["end_offset"],
                r["lag"],
                ",".join(owners.get(TopicPartition(r["topic"], r["partition"]), [])) or None,
            )
            for r in rows
        ],
    )


def _describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        types = {g.group_id: g.type for g in admin.list_groups()}
        share_ids = [g for g in args.group if types.get(g) == "share"]
        shared = {g.group_id: (g, r) for g, r in _describe_share(admin, share_ids)}
        others = [g for g in args.group if g not in shared]
        described = admin.describe_groups(others) if others else {}
        lags = {}
        for g in described.values():
            assigned = [tp for m in g.members for tp in m.assignment]
            lags[g.group_id] = _lag_rows(admin, g.group_id, assigned) if g.state != "Dead" else []
    if args.json:
        print_json(
            [_share_json(*shared[g]) for g in share_ids]
            + [
                {
                    "group": g.group_id,
                    "type": g.type,
                    "state": g.state,
                    "protocol_type": g.protocol_type,
                    "protocol": g.protocol,
                    "group_epoch": g.group_epoch,
                    "coordinator": g.coordinator,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "host": m.host,
                            "member_epoch": m.member_epoch,
                            "assignment": [[tp.topic, tp.partition] for tp in m.assignment],
                            "target_assignment": [
                                [tp.topic, tp.partition] for tp in m.target_assignment
                            ],
                        }
                        for m in g.members
                    ],
                    "offsets": lags[g.group_id],
                }
                for g in described.values()
            ]
        )
        return 0
    for share_id in share_ids:
        _print_share(*shared[share_id])
    for g in described.values():
        if g.state == "Dead":
            print_table(f"Group {g.group_id} does not exist", [], [])
            continue
        epoch = f"  GroupEpoch: {g.group_epoch}" if g.group_epoch is not None else ""
        what = "Assignor" if g.type == "consumer" else "Protocol"
        print_table(
            f"Group: {g.group_id}  Type: {g.type}  State: {g.state}  "
            f"{what}: {g.protocol or '-'}  Coordinator: {g.coordinator}{epoch}",
            ["MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"],
            [
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.host,
                    _partitions_text(m.assignment),
                )
                for m in g.members
            ],
        )
        owner = {tp: m.member_id for m in g.members for tp in m.assignment}
        _print_lag(g.group_id, lags[g.group_id], owner)
    return 0


def _partitions_text(tps: Any) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return (
        " ".join(f"{t}:{','.join(map(str, sorted(p)))}" for t, p in sorted(by_topic.items())) or "-"
    )


def _lag(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        described = admin.describe_groups([args.group])[args.group]
        if described.state == "Dead":
            raise CommandError(f"group {args.group!r} does not exist")
        assigned = [tp for m in described.members for tp in m.assignment]
        rows = _lag_rows(admin, args.group, assigned)
    if args.json:
        print_json(
            {
                "group": args.group,
                "state": described.state,
                "partitions": rows,
                "total_lag": sum(r["lag"] or 0 for r in rows),
            }
        )
    else:
        owner = {tp: m.member_id for m in described.members for tp in m.assignment}
        _print_lag(args.group, rows, owner)
        print_table(None, ["TOTAL-LAG"], [(sum(r["lag"] or 0 for r in rows),)])
    return 0


def _reset(args: argparse.Namespace) -> int:
    from kafkaconsumer.admin import EARLIEST, LATEST
    from kafkaconsumer.structs import OffsetAndMetadata

    # Bad input is reported before anything is asked of the cluster.
    when_ms: int | None = None
    if args.to_datetime is not None:
        when_ms = parse_datetime_ms(args.to_datetime)
    elif args.by_duration is not None:
        when_ms = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    with admin_client(args) as admin:
        state = admin.describe_groups([args.group])[args.group].state
        if state not in ("Empty", "Dead"):
            raise CommandError(
                f"offsets of group {args.group!r} can only be reset while it has no members, "
                f"but it is {state}; stop its consumers first"
            )
        committed = admin.list_consumer_group_offsets(args.group)
        if args.all_topics:
            tps = sorted(committed)
            if not tps:
                raise CommandError(
                    f"group {args.group!r} has no committed offsets; name the "
                    "partitions with --topic"
                )
        else:
            tps = _topic_partitions(admin, args.topic)
        low = {tp: r.offset for tp, r in admin.list_offsets({tp: EARLIEST for tp in tps}).items()}
        high = {tp: r.offset for tp, r in admin.list_offsets({tp: LATEST for tp in tps}).items()}
        target: dict[Any, int] = {}
        if args.to_earliest:
            target = dict(low)
        elif args.to_latest:
            target = dict(high)
        elif args.to_offset is not None:
            target = {tp: args.to_offset for tp in tps}
        elif args.shift_by is not None:
            for tp in tps:
                om = committed.get(tp)
                if om is None:
                    raise CommandError(
                        f"{tp.topic}:{tp.partition} has no committed offset to shift"
                    )
                target[tp] = om.offset + args.shift_by
        else:
            assert when_ms is not None
            found = admin.list_offsets({tp: when_ms for tp in tps})
            # No record at or after the time: the end of the log, as in Java.
            target = {tp: found[tp].offset if found[tp].offset >= 0 else high[tp] for tp in tps}
        # Offsets outside the log are moved to its nearest end, as the Java tool does.
        target = {tp: min(max(off, low[tp]), high[tp]) for tp, off in target.items()}
        if args.execute:
            admin.alter_consumer_group_offsets(
                args.group, {tp: OffsetAndMetadata(off) for tp, off in target.items()}
            )
    rows = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "previous_offset": committed[tp].offset if tp in committed else None,
            "new_offset": off,
        }
        for tp, off in sorted(target.items())
    ]
    if args.json:
        print_json({"group": args.group, "executed": bool(args.execute), "partitions": rows})
    else:
        title = (
            f"Group {args.group}: new offsets committed"
            if args.execute
            else f"Group {args.group}: new offsets (dry run, nothing changed; --execute "
            "commits them)"
        )
        print_table(
            title,
            ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
            [(r["topic"], r["partition"], r["previous_offset"], r["new_offset"]) for r in rows],
        )
    return 0


def _delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        admin.delete_consumer_groups(args.group)
    for g in args.group:
        print(f"Deleted group {g}")
    return 0


def _delete_offsets(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        tps = _topic_partitions(admin, args.topic)
        admin.delete_consumer_group_offsets(args.group, tps)
    print(f"Deleted the committed offsets of group {args.group} for {_partitions_text(tps)}")
    return 0
