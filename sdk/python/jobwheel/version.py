"""The SDK's version, as the registry and the console show it."""

from __future__ import annotations

SDK_VERSION = "jobwheel-python/0.1"
