"""The ``kafkaconsumer`` command (also ``python -m kafkaconsumer``).

Commands: ``demo`` (a live consumer-group demo on a local broker), ``consume`` (a console
consumer), ``share`` (a console share consumer), ``groups`` (list, describe, lag, reset-offsets, delete, delete-offsets) and
``topics`` (list, describe). Problems are reported as one line on stderr with a non-zero exit
status: 1 for a failure reported by the cluster (or none reachable), 2 for a usage error
(bad options, a bad configuration value), 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from kafkaconsumer import __version__

from . import consume, demo, groups, share, topics
from ._common import BOOTSTRAP_ENV, CommandError
from .demo import run_demo

__all__ = ["main", "run_demo", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the whole command tree."""
    parser = argparse.ArgumentParser(
        prog="kafkaconsumer",
        description="Kafka from the command line: consume records, inspect and manage "
        "consumer groups and topics, or run a live demo on a local broker.",
        epilog="Run 'kafkaconsumer COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"kafkaconsumer {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log the client's activity at DEBUG level on stderr",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo.add_parser(sub)
    consume.add_parser(sub)
    share.add_parser(sub)
    groups.add_parser(sub)
    topics.add_parser(sub)
    return parser


def _fail(message: str, status: int) -> int:
    sys.stderr.write(f"kafkaconsumer: error: {message}\n")
    sys.stderr.flush()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkaconsumer`` command; returns the exit status."""
    from kafkaconsumer.errors import ConfigError, KafkaError, KafkaTimeoutError

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.CRITICAL,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except (CommandError, ConfigError) as exc:
        return _fail(str(exc), 2)
    except KafkaTimeoutError as exc:
        where = getattr(args, "bootstrap_server", None) or os.environ.get(BOOTSTRAP_ENV)
        hint = f" (is the cluster at {where} reachable?)" if where else ""
        return _fail(f"{exc or 'timed out'}{hint}", 1)
    except KafkaError as exc:
        return _fail(str(exc) or type(exc).__name__, 1)
    except ValueError as exc:
        # Raised by the clients for values they refuse (e.g. an empty topic name).
        return _fail(str(exc), 2)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep the interpreter's final
        # flush of stdout from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except ImportError as exc:
        return _fail(
            f"{exc}; install the missing package (pip install 'kafkaconsumer[dev]' has them all)", 1
        )


if __name__ == "__main__":
    sys.exit(main())
