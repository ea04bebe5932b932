"""Running an experiment: the runner, the session, settings and their undo journal, fences, owners,
limits.
"""
