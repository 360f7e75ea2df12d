"""coordinator-api: a pluggable, typed group-coordination framework on Kafka's group protocol."""

from coordinator_api._errors import ConfigurationError, CoordinatorApiError, CoordinatorStartError
from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator

__all__ = [
    "ConfigurationError",
    "CoordinatorApiError",
    "CoordinatorConfig",
    "CoordinatorStartError",
    "EmbeddedCoordinator",
]
