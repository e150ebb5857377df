"""What a reader sees: the Markdown report and its figures, comparisons between runs, two models side by side, and
merged runs."""
