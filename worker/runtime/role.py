"""What the runtime knows of a cluster role: its name and its own group (`role_settings`)."""

from __future__ import annotations

from worker.settings import Settings


def role_settings(settings: Settings, role: str) -> Settings:
    """The role's group is `<group>-<role>`: its members, offsets and transactional ids are
    its own (transactional id `<group>-<role>-<instance>`)."""
    worker = settings.worker.model_copy(update={"group_id": f"{settings.worker.group_id}-{role}"})
    return settings.model_copy(update={"worker": worker})
