"""Running an experiment: the request, its limits, the session and the runner, which
conducts a run's three parts (`opening`, `rounds_loop` with `trial`, `closing`, sharing a
`context`). What a run changes on a server and how it is put back lives next door, in
`explorer.lab.safety`.
"""
