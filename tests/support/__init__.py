"""Helpers shared by the test rooms: plain functions and constants, never tests or fixtures.

Fixtures stay in tests/conftest.py; a test module imports helpers from here, never from
another test module or from conftest (tests/unit/test_rooms.py checks that).
"""
