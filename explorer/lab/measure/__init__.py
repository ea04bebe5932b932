"""Measuring while a run goes: the sampler, statistics views per server version, the phase probe,
the machine's environment.
"""
