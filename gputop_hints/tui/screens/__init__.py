"""Screens over the monitor: the main one, a process's detail, help, the seek prompt."""
