"""Pure analysis: verdicts, the run's judgement, report tables, the card's rows, units.

Depends on `explorer.models` only: no asyncpg, no server, no engine (import-linter checks it).
"""
