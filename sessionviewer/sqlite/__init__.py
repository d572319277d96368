"""Django's SQLite engine, with database files only their owner can read (see base.py)."""
