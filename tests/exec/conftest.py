"""Fixtures for tests/exec (the helpers live in exec_support, a uniquely named module)."""

from exec_support import runner

__all__ = ["runner"]
