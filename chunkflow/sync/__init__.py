"""Synchronizers for unaligned concurrent writes (thread, process, distributed): issue 3."""
