"""Where the gateway keeps its state when it is not only files and SQLite: PostgreSQL, shared by
several gateways (``storage.backend: postgres``; docs/scale-out.md)."""
