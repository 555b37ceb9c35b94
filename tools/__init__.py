"""Developer tools (not installed): generators for files kept in the repository."""
