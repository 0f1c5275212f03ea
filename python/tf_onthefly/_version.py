"""The package version (the wheel's too)."""

__version__ = "0.1.0"
