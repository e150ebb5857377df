"""Where the project's files are (paths) and how every output is written so that a reader never sees half of it (atomic)."""
