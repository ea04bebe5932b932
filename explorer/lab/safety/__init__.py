"""What pgwx changes on a server and how it puts it back: settings and their undo journal,
leftovers of a dead run, owners, the guard around a run's schema, the fence for the user's SQL.

A closed group: nothing here imports the runner (the import contract says so).
"""
