"""The configured session roots: SESSIONVIEWER_ROOTS entries parsed and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from sessionviewer.readers import FORMATS

_TAG = re.compile(r"^(\w+)=(.+)$")


@dataclass(frozen=True, slots=True)
class RootSpec:
    path: Path
    format: str | None  # None: detected from the root's layout


def parse_root(item: str) -> RootSpec:
    """'PATH' or 'FORMAT=PATH'; an unknown FORMAT is a configuration error."""
    fmt = None
    if match := _TAG.match(item.strip()):
        fmt, item = match.group(1), match.group(2)
        if fmt not in FORMATS:
            raise ImproperlyConfigured(
                f"unknown session format {fmt!r} in {item!r}; expected one of {', '.join(FORMATS)}"
            )
    return RootSpec(Path(item.strip()).expanduser().absolute(), fmt)


def configured_roots() -> list[RootSpec]:
    return [parse_root(item) for item in settings.SESSIONVIEWER_ROOTS]


def memory_roots() -> list[Path]:
    """Fluux memory roots: the explicit setting, else the fluux_xmpp session roots."""
    if settings.SESSIONVIEWER_MEMORY_ROOTS:
        return [Path(p).expanduser().absolute() for p in settings.SESSIONVIEWER_MEMORY_ROOTS]
    return [spec.path for spec in configured_roots() if spec.format == "fluux_xmpp" and spec.path.is_dir()]


def is_inside_roots(path: Path, roots: list[Path]) -> bool:
    """Whether path (symlinks resolved) lies inside one of roots."""
    resolved = path.resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


# A Docker container's host name: its id, 12 hex digits (or all 64).
_CONTAINER_ID = re.compile(r"[0-9a-f]{12}|[0-9a-f]{64}")


def container_id_warning(machine: str, vendor: str) -> str:
    """What an indexer on a shared database says of a machine name that looks like a
    container's id ("" when it does not): that id is new on every deploy, and each new one
    would index the same files again as another machine's."""
    if vendor != "postgresql" or not _CONTAINER_ID.fullmatch(machine):
        return ""
    return (
        f"warning: the machine name {machine!r} looks like a container id, which changes on every "
        "deploy: set SESSIONVIEWER_MACHINE to a name that stays"
    )
