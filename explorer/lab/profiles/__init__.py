"""Profiles: finding and loading them, checking them against a server, the user's own profiles."""
