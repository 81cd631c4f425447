"""What the monitor says outside the TUI: the ``--once`` summary (text and
JSON), the post-mortem report, and the plain-text rendering of a finding that
every output shares.
"""
