"""Time: the sampler thread that ticks a source for the monitor, the deadlines
every real-time loop keeps, the headless record loop, the sampling of a one-off
summary, and the replay player and its clock. No Textual here; the TUI and the
command line drive these.
"""
