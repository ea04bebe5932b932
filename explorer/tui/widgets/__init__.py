"""The widgets of the app (widgets/chart.py is the only importer of textual_plotext)."""
