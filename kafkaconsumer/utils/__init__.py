"""Small building blocks every layer may use (below ``network/`` and ``internals/``)."""
