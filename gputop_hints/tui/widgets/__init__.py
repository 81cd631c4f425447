"""One module per widget; all of them draw cached strips (see :mod:`.base`)."""
