"""Files the package writes and fetches: saves swapped in whole
(storage.py) and sealed by a manifest (manifest.py), files fetched from a
mirror or their publisher (fetching.py) into a cache under a lock
(downloads.py), and arrays spilled to disk (spill.py)."""
