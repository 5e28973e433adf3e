"""The harness's version: at the bottom of the package, so every layer may name it without importing
the root (whose lazy exports reach every layer)."""

__version__ = "0.1.0"
