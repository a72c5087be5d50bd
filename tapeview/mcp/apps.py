"""The MCP app: its view at /mcp and the `tapeview mcp --stdio` command."""

from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "tapeview.mcp"
    label = "tapeview_mcp"  # not "mcp": that is the SDK's package name
    verbose_name = "MCP server"
