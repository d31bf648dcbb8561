"""Statistics, models and comparisons: pure functions over samples."""
