"""The kernel core: protocol, handle, registry, watchdog, output and tool RPC (no pytest here)."""
