"""MCP servers as tool providers: configuration, process and session ownership, content rendering."""
