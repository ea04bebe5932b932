"""The textual-free run state every front end folds events into, and the stream's narration."""
