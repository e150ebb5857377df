"""Where the project's files are (paths); how every output is written so that a reader never sees half of it, and how
every JSON file is read back so that damage is one line naming it (atomic)."""
