"""The package version, written only here (setup.cfg and the ApiVersions client name read it)."""

__version__ = "0.1.0"
