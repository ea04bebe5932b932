"""What is kept: the results store, recordings (`.pgwx`), and the replay source that reads them
back.
"""
