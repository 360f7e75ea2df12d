"""Typed errors of the framework. Messages name what went wrong and what to do next."""

from __future__ import annotations


class CoordinatorApiError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(CoordinatorApiError, ValueError):
    """A setting, a config file or an argument has a value the framework cannot use."""


class CoordinatorStartError(CoordinatorApiError, RuntimeError):
    """The embedded coordinator could not start (port taken, data directory unusable, ...)."""
