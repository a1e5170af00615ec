"""Files the package writes and fetches: saves swapped in whole and sealed
by a manifest (storage.py), and downloads cached under a lock (downloads.py)."""
