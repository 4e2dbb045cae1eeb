"""Long-term memory: Markdown files indexed into SQLite (FTS5 + sqlite-vec) and searched hybrid."""
