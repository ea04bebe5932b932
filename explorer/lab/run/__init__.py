"""Running an experiment: the request, its limits, the session and the runner. What a run
changes on a server and how it is put back lives next door, in `explorer.lab.safety`.
"""
