"""Per-chunk reputation (Beta counters, credit shares, feedback) arrives with its own issue."""
