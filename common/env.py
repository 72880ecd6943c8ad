"""Read settings from the environment, failing loudly on values that do not parse."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def env_floats(name: str, default: list[float], *, length: int) -> list[float]:
    """A comma-separated list of exactly `length` numbers."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        values = [float(item) for item in raw.split(",")]
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {length} comma-separated numbers, got {raw!r}") from None
    if len(values) != length:
        raise ImproperlyConfigured(f"{name} must be {length} comma-separated numbers, got {raw!r}")
    return values


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'30/minute' -> (30, 60): DRF's notation, the period read from its first letter."""
    try:
        count, period = rate.split("/")
        return int(count), _PERIODS[period.strip()[0].lower()]
    except (ValueError, KeyError, IndexError):
        raise ValueError(f"not a rate: {rate!r} (expected e.g. '30/minute')") from None


def env_rate(name: str, default: str) -> str:
    """A request rate such as '30/minute', checked at start."""
    value = os.environ.get(name, default)
    try:
        parse_rate(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None
    return value


def calibration_read(path) -> dict:
    """The thresholds calibrate_gate stored, or {} when it has not run (settings then fall back to
    their defaults). Here, beside the other readers of configuration, so that settings need no app
    to read them and calibrate_gate reads them the same way."""
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"CAIRN_CALIBRATION_FILE {path} is not valid JSON ({exc}); re-run calibrate_gate"
        ) from exc
