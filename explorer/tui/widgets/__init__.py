"""The widgets of the app (only widgets/chart.py draws with plotext)."""
