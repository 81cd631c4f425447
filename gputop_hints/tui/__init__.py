"""The Textual user interface. Nothing below this package imports it."""
