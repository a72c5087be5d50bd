"""The memory app: zones, files and stores of agent memory."""

from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    name = "memory_admin"
    verbose_name = "Memory"
