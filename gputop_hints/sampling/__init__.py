"""Time: the sampler thread that ticks a source, the headless record loop, and
the replay player and its clock. No Textual here; the TUI drives these.
"""
