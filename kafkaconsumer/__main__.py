"""``python -m kafkaconsumer``: the ``kafkaconsumer`` command."""

import sys

from kafkaconsumer.cli import main

sys.exit(main())
