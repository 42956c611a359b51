"""Alembic migrations of the service's tables (``storage.db.migrate`` applies them)."""
